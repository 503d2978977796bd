# Under CURVE one key holds one rank (docs/security.md): a process opening
# more connections with an admitted key gets no more ranks; each new
# connection with the key takes the rank its key holds, the old connection
# is lost. The job of 2 workers never grows a third rank.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/allowed"
"$BIN/dmlps-keygen" -q "$WORK/server" "$WORK/allowed/w0" "$WORK/allowed/w1" >/dev/null
start_server --workers 2 --model softmax --policy bsp --batch 32 --max-iterations 400 \
  --max-seconds 60 --curve-secret "$WORK/server.key" --curve-allow "$WORK/allowed"
keys() { echo --curve-secret "$WORK/allowed/$1.key" --curve-server-key "$WORK/server.pub"; }
# shellcheck disable=SC2046
start_worker w0 --model softmax $(keys w0)
# shellcheck disable=SC2046
start_worker w1 --model softmax $(keys w1)
w1=$WORKER_PID
wait_log "$WORK/server.log" "all 2 workers ready; training starts" 30
# Three more connections with w0's key, one after the other.
for i in 1 2 3; do
  # shellcheck disable=SC2046
  start_worker "extra-$i" --model softmax --reconnect-timeout 1 $(keys w0)
  wait_log "$WORK/server.log" "its key joined again from a new connection" 30
  sleep 0.5
done
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server"
wait_for "$w1" 30
expect_exit 0 "$RC" "worker w1"
grep -qE "worker [2-9] (joins|joined)" "$WORK/server.log" &&
  fail "a key got a second rank: $(grep -E 'worker [2-9] (joins|joined)' "$WORK/server.log")"
swaps=$(grep -c "its key joined again from a new connection" "$WORK/server.log")
echo "one rank per key: $swaps connections with w0's key took its rank, no third rank"
