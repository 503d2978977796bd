# Routing-id squatting: a peer connects DEALERs whose ids are those a ROUTER
# would number its anonymous peers with if its counter were predictable,
# then one with no id (which libzmq would number into a taken id and abort
# on). The server must survive, and a real worker still trains.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy asp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 --max-connections 40

start_attack_peer squat "$ENDPOINT" 32
wait_ok 30 "squatting peer" "$PEER_PID"
server_alive "the squatting peer"

start_attack_peer squat "$ENDPOINT" 8
sleep 0.3
start_worker w0
w0=$WORKER_PID
wait_ok 30 "squatting peer" "$PEER_PID"
# Aborted (134) when a worker joining among squatted ids kills it.
wait_ok 300 "dmlps-server after the squatting peer" "$SERVER_PID"
wait_ok 30 "worker 0" "$w0"
echo "ok: $(tr '\n' ' ' <"$WORK/attack.out"); run finished at accuracy $(last_accuracy)"
