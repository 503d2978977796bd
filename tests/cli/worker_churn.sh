# Churn without loss (docs/algorithms-robustness.md, workers leaving and
# joining): a worker killed with kill -9 is lost as soon as its connection
# closes, not after --worker-timeout of silence, and the worker started in
# its place begins from the server's very model, checked by the digest the
# first model after joining carries; it takes the lost one's rank and
# goes on through that rank's data. Run on one server and on two shards,
# with a model large enough that replies stream in chunks.
. "$(dirname "$0")/lib.sh"

# churn TAG MODEL SHARDS: 3 workers under BSP; the last one is killed
# once the run passes iteration 60 and a new one joins in its place.
churn() {
  local tag=$1 model=$2 shards=$3 victim pid
  start_server --workers 3 --policy bsp --model "$model" --worker-timeout 60 \
    --max-iterations 150 --eval-every 30 ${shards:+--shard "0/$shards"}
  [ -z "$shards" ] || start_shard 1 2
  for i in 0 1 2; do start_worker "$tag-w$i" --threads 1; done
  victim=$WORKER_PID
  wait_iteration 60 120
  kill -9 "$victim"
  # Lost for its closed connection: the 60 s of silence never pass.
  wait_log "$WORK/server.log" "lost worker [0-9]+ \(.*:$victim\): its connection closed" 10
  local lost_rank
  lost_rank=$(sed -nE "s/.*lost worker ([0-9]+) \(.*:$victim\): its connection closed.*/\1/p" \
    "$WORK/server.log")
  start_worker "$tag-w3" --threads 1
  pid=$WORKER_PID
  wait_for "$SERVER_PID" 120
  expect_exit 0 "$RC" "dmlps-server ($tag)"
  wait_for "$pid" 30
  expect_exit 0 "$RC" "the worker that joined in its place ($tag)"
  # The new worker checked the first model it got, and it was the one the
  # server (each shard) sent it.
  local line version digests
  line=$(grep -E "version [0-9]+ of the model came whole" "$WORK/$tag-w3.log") ||
    fail "$tag: the worker that joined did not check its first model"
  echo "$tag: $line"
  version=$(sed -E 's/.*version ([0-9]+) of the model.*/\1/' <<<"$line")
  digests=$(sed -E 's/.*digests? ([0-9a-f ]+) equals? the server.*/\1/' <<<"$line")
  [ "$version" -gt 0 ] || fail "$tag: the worker joined at version $version, not a trained model"
  # It took the lost worker's rank, and goes on through that rank's data.
  grep -qE "worker $lost_rank of 3:" "$WORK/$tag-w3.log" ||
    fail "$tag: the new worker did not take rank $lost_rank: $(grep ' of 3:' "$WORK/$tag-w3.log")"
  grep -qE "worker $lost_rank goes on through its data after the [1-9][0-9]* samples" \
    "$WORK/$tag-w3.log" || fail "$tag: the new worker began its rank's data afresh"
  [ "$(wc -w <<<"$digests")" -eq "${shards:-1}" ] || fail "$tag: digests '$digests'"
  local k=0 log
  for d in $digests; do
    log=$WORK/server.log
    [ "$k" -eq 0 ] || log=$WORK/shard-$k.log
    grep -qE "sent worker [0-9]+ version $version of the model, digest $d$" "$log" ||
      fail "$tag: $(basename "$log") did not send digest $d at version $version"
    k=$((k + 1))
  done
  mv "$WORK/server.log" "$WORK/server-$tag.log"
}

# A reply of mlp:512 (1.6 MB) streams in two chunks; each shard's slice
# of mlp:1024 does too.
churn one mlp:512 ""
churn sharded mlp:1024 2
echo "ok"
