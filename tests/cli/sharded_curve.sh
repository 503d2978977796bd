# Sharded servers with CURVE: every shard holds the same key pair and the
# same --curve-allow folder. Shard 1 registers with shard 0 as a CURVE
# client holding that pair; a shard with another key pair, or none, cannot
# join. A worker whose key is not listed is refused at the handshake by
# shard 0 and by shard 1; the listed workers train to the target over
# encrypted connections to both shards.
. "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/allowed" "$WORK/other"
"$BIN/dmlps-keygen" -q "$WORK/server" "$WORK/allowed/w0" "$WORK/allowed/w1" \
  "$WORK/other/stranger" >/dev/null
curve=(--curve-secret "$WORK/server.key" --curve-allow "$WORK/allowed")
start_server --shard 0/2 --workers 2 --policy bsp --target-accuracy 0.80 --max-iterations 3000 \
  --eval-every 25 "${curve[@]}"

# A shard with another key pair, then one without CURVE: neither gets in.
RC=0
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  --curve-secret "$WORK/other/stranger.key" --curve-allow "$WORK/allowed" --worker-timeout 20 \
  2>"$WORK/wrong-shard.log" || RC=$?
expect_exit 78 "$RC" "a shard with another key pair"
grep -q "hung up\|refused this client's key\|curve-server-key" "$WORK/wrong-shard.log" ||
  fail "the shard with another key pair was not told why: $(cat "$WORK/wrong-shard.log")"
RC=0
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  --worker-timeout 20 2>"$WORK/plain-shard.log" || RC=$?
expect_exit 78 "$RC" "a shard without CURVE"
grep -q "requires CURVE" "$WORK/plain-shard.log" ||
  fail "the plaintext shard was not told why: $(cat "$WORK/plain-shard.log")"
grep -q "registered" "$WORK/server.log" && fail "a shard without the servers' key registered"

"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard 1/2 --coordinator "$ENDPOINT" \
  --endpoint-file "$WORK/shard-1.endpoint" "${curve[@]}" 2>"$WORK/shard-1.log" &
shard=$!
CHILDREN+=("$shard")
wait_log "$WORK/server.log" "server shard 1 .* registered" 30
shard_endpoint=$(cat "$WORK/shard-1.endpoint")

# A worker whose key is not listed, at shard 0 and at shard 1.
stranger_key=$(grep -v '^#' "$WORK/other/stranger.pub")
for target in "$ENDPOINT" "$shard_endpoint"; do
  RC=0
  "$BIN/dmlps-worker" --server "$target" --curve-secret "$WORK/other/stranger.key" \
    --curve-server-key "$WORK/server.pub" --connect-timeout 20 2>"$WORK/stranger.log" || RC=$?
  expect_exit 78 "$RC" "a worker with an unknown key at $target"
  grep -q "refused this client's key" "$WORK/stranger.log" ||
    fail "the stranger was not told why at $target: $(cat "$WORK/stranger.log")"
done
grep -qF "refused a connection from key $stranger_key" "$WORK/server.log" ||
  fail "shard 0 did not log the stranger's key"
grep -qF "refused a connection from key $stranger_key" "$WORK/shard-1.log" ||
  fail "shard 1 did not log the stranger's key"

start_worker w0 --curve-secret "$WORK/allowed/w0.key" --curve-server-key "$WORK/server.pub"
w0=$WORKER_PID
start_worker w1 --curve-secret "$WORK/allowed/w1.key" --curve-server-key "$WORK/server.pub"
wait_ok 300 "shard 0" "$SERVER_PID"
grep -q "reached accuracy" "$WORK/server.log" || fail "the target was not reached"
wait_ok 60 "a member of the CURVE cluster" "$shard" "$w0" "$WORKER_PID"
grep -q "connected to 2 server shards" "$WORK/w0.log" || fail "worker 0 did not use both shards"
echo "ok: 2 shards over CURVE trained to $(last_accuracy); 2 shards and 2 workers refused"
