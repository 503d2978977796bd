# Backup workers keep the first N - B pushes of a round to arrive, so a
# worker that answers at once is always among them: a robust rule over
# fewer than 3 of them is refused (exit 64, one line naming both flags),
# and one over 3 or more trains.
. "$(dirname "$0")/lib.sh"

server_refuses "--aggregate median with --backup 2 of --workers 4 keeps only the first 2 pushes" \
  --workers 4 --policy backup --backup 2 --aggregate median
server_refuses "--aggregate trimmed-mean:0.2 with --backup 1 of --workers 3 keeps only the first 2" \
  --workers 3 --policy backup --aggregate trimmed-mean:0.2
server_refuses "--aggregate cclip:1 with --backup 3 of --workers 4 keeps only the first 1 push " \
  --workers 4 --policy backup --backup 3 --aggregate cclip:1
# The mean, which no worker is meant to be kept out of, takes the same
# backup: the server starts and listens.
start_server --workers 4 --policy backup --backup 2
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true

[ -d /usr/share/datasets/fashion-mnist ] || { echo "skip: no Fashion-MNIST"; exit 77; }

# Three pushes of four a round under the median: it runs its 30 rounds.
start_server --workers 4 --policy backup --backup 1 --aggregate median --model softmax \
  --max-iterations 30 --eval-every 10
pids=()
for r in 0 1 2 3; do
  start_worker "worker-$r"
  pids+=("$WORKER_PID")
done
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server with --backup 1 of 4 and --aggregate median"
for pid in "${pids[@]}"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "dmlps-worker"
done
[ "$(tail -n 1 "$WORK/server.tsv" | cut -f 2)" -eq 30 ] || fail "not 30 rounds: $(cat "$WORK/server.tsv")"
echo "ok: backup:1 of 4 under the median ran $(tail -n 1 "$WORK/server.tsv" | cut -f 2-3)"
