# A joined peer that reads server shard 0's replies but never shard 1's: it
# pulls and pushes for 15 s while shard 1's slices of the model pile up for
# it. Shard 1 bounds its send queue by its slice's size, which it learns
# only after it binds, as shard 0 does by the model's: it must drop the peer
# once that queue is full (naming it in its log) and stay within a bounded
# memory; a real worker then trains to the target.
. "$(dirname "$0")/lib.sh"
start_server --shard 0/2 --workers 1 --policy asp --model mlp:512 --target-accuracy 0.80 \
  --max-iterations 100000 --eval-every 100
start_shard 1 2
shard=$SHARD_PID
wait_log "$WORK/server.log" "server shard 1 .* registered" 30
wait_log "$WORK/shard-1.log" "parameters \[" 30
attack_rss 15 "$shard" "the peer that does not read shard 1's replies" \
  noread-shard "$ENDPOINT" 15
# Unbounded, the queued slices (0.8 MB each) grow it by about 100 MiB a second.
expect_rss_within 200 "shard 1"
grep -q "shard 1: dropped worker 0: it does not read its replies" "$WORK/shard-1.log" ||
  fail "shard 1 did not drop the peer, by name, for not reading"

train_one_worker 300 "the peer that does not read shard 1's replies"
wait_ok 60 "shard 1 after the peer that does not read" "$shard"
echo "ok: $(cat "$WORK/attack.out"); run finished at accuracy $(last_accuracy)"
