# Sharded servers. 1 shard and 3 shards, with 3 workers under BSP, the same
# seed and data order and --deterministic, end with the same model bit for
# bit; a 3-shard cluster trains to a target; bad shard flags are usage
# errors; a shard that does not fit the job is refused; garbage sent to a
# shard is answered with errors; a shard lost mid-run ends the run with an
# error instead of a hang, a lost worker does not stop the shards.
. "$(dirname "$0")/lib.sh"

# --- Bit for bit: 1 shard against 3.
same=(--policy bsp --model mlp:32 --batch 32 --seed 11 --max-iterations 40 --eval-every 20
      --deterministic)
run_cluster 1 3 one none "${same[@]}"
run_cluster 3 3 three none "${same[@]}"
params=$((784 * 32 + 32 + 32 * 10 + 10))
[ "$(stat -c %s "$WORK/one.model")" -eq $((params * 4)) ] || fail "one.model is not $params floats"
grep -q "parameters \[8484, 16967)" "$WORK/three-shard-1.log" ||
  fail "shard 1 does not hold the second third of the parameters"
cmp "$WORK/one.model" "$WORK/three.model" ||
  fail "1 shard and 3 shards ended with different models"
# And the model trained: the accuracy rose from the untrained one.
awk -F '\t' 'NR == 2 { first = $3 } END { exit !($3 > first + 0.3) }' "$WORK/three.tsv" ||
  fail "the 3-shard run did not train: $(cat "$WORK/three.tsv")"
diff <(cut -f 2- "$WORK/one.tsv") <(cut -f 2- "$WORK/three.tsv") >/dev/null ||
  fail "1 shard and 3 shards evaluated differently"
echo "1 shard and 3 shards: the same $params parameters bit for bit; $(tail -n 1 "$WORK/three.tsv")"

# --- A 3-shard cluster trains to a target, with a model streamed in chunks
# (mlp:512: 1.6 MB, a slice larger than one 1 MiB chunk on 2 shards).
start_server --shard 0/2 --workers 2 --policy bsp --model mlp:512 --target-accuracy 0.8 \
  --max-iterations 2000 --eval-every 25
start_shard 1 2 --endpoint-file "$WORK/shard1.endpoint"
shard=$SHARD_PID
start_workers 2 w
# A peer sending garbage to shard 1 mid-run gets Errors; training goes on.
for _ in $(seq 100); do [ -s "$WORK/shard1.endpoint" ] && break; sleep 0.1; done
wait_iteration 25 120
RC=0
"$TEST_BIN/dmlps-test-peer" garbage "$(cat "$WORK/shard1.endpoint")" >"$WORK/peer.out" \
  2>"$WORK/peer.log" || RC=$?
expect_exit 0 "$RC" "dmlps-test-peer garbage against shard 1"
wait_ok 240 "dmlps-server --shard 0/2 to 0.8" "$SERVER_PID"
wait_ok 30 "a member of the 2-shard cluster" "$shard" "${WORKERS[@]}"
echo "2 shards, mlp:512: $(tail -n 1 "$WORK/server.tsv")"

# --- A worker lost mid-run: shard 0 forgets it, every shard goes on with the
# other two (--deterministic: the round's pushes are staged at its end).
start_server --shard 0/2 --workers 3 --policy bsp --model mlp:32 --max-iterations 300 \
  --eval-every 50 --deterministic --heartbeat-ms 100 --worker-timeout 1.5
start_shard 1 2 --heartbeat-ms 100
shard=$SHARD_PID
pids=()
for r in 0 1 2; do
  start_worker "lose-$r" --rank "$r" --heartbeat-ms 100
  pids+=("$WORKER_PID")
done
wait_iteration 50 60
kill -9 "${pids[2]}"
wait_ok 60 "dmlps-server --shard 0/2 after losing worker 2" "$SERVER_PID"
grep -q "lost worker 2" "$WORK/server.log" || fail "shard 0 did not lose worker 2"
wait_ok 30 "a member of the cluster that lost a worker" "$shard" "${pids[0]}" "${pids[1]}"
echo "2 shards, a worker lost: $(tail -n 1 "$WORK/server.tsv")"

# --- Usage errors.
RC=0
"$BIN/dmlps-server" --shard 3/2 2>"$WORK/usage.err" || RC=$?
expect_exit 64 "$RC" "--shard 3/2"
RC=0
"$BIN/dmlps-server" --shard 0/3 --coordinator tcp://127.0.0.1:5555 2>"$WORK/usage.err" || RC=$?
expect_exit 64 "$RC" "--shard 0/3 with --coordinator"
grep -q -- "--coordinator is for shards 1 and up" "$WORK/usage.err" ||
  fail "no word of --coordinator: $(cat "$WORK/usage.err")"
RC=0
"$BIN/dmlps-server" --shard one/two 2>"$WORK/usage.err" || RC=$?
expect_exit 64 "$RC" "--shard one/two"

# --- A shard of another job is refused, with a one-line reason.
start_server --shard 0/2 --workers 1 --model mlp:32 --max-seconds 30
start_shard 1 3 --worker-timeout 10
wait_for "$SHARD_PID" 20
expect_exit 69 "$RC" "shard 1/3 joining a job of 2 shards"
grep -q "does not fit this job of 2 shards" "$WORK/shard-1.log" ||
  fail "the refusal does not say why: $(cat "$WORK/shard-1.log")"

# --- A shard lost mid-run: shard 0 ends the run with an error, the workers stop.
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --shard 0/2 --workers 1 --model mlp:32 --max-seconds 60 --heartbeat-ms 100 \
  --worker-timeout 1.5
start_shard 1 2 --heartbeat-ms 100
shard=$SHARD_PID
start_worker lone
worker=$WORKER_PID
wait_iteration 100 60
kill -9 "$shard"
wait_for "$SERVER_PID" 20
expect_exit 69 "$RC" "shard 0 after losing shard 1"
grep -q "server shard 1 at .* lost" "$WORK/server.log" || fail "shard 0 does not say shard 1 was lost"
wait_for "$worker" 20
echo "a lost shard: shard 0 exits 69, the worker exits $RC"
