# dmlps-bench run --shards S: the server runs as shard 0 of S and the other
# shards join it on loopback, each with its log in the run's folder; a shard
# count the server refuses for a policy fails that run with its reason.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
small=(--workers 2 --batch 64 --lr 0.05 --eval-every 10 --target 0 --max-iterations 20
  --max-seconds 60)

"$bench" run "${small[@]}" --shards 3 --policies bsp --format tsv --out "$WORK/runs" \
  >"$WORK/table.tsv" 2>"$WORK/bench.log" || fail "dmlps-bench run --shards 3 exited $?"
expect_tsv "$WORK/table.tsv" "$BENCH_TSV_HEADER" 1
grep -q $'^bsp\t1\t1\t' "$WORK/table.tsv" || fail "bsp did not finish: $(cat "$WORK/table.tsv")"
run=$WORK/runs/bsp-1
grep -q "shard 0 of 3" "$run/server.log" || fail "the server was not shard 0 of 3: $(head -n 3 "$run/server.log")"
grep -q "(3/3 shards)" "$run/server.log" || fail "the shards did not all register"
for k in 1 2; do
  [ -s "$run/shard-$k.log" ] || fail "no shard-$k.log"
  grep -q "shard $k stopped by shard 0" "$run/shard-$k.log" ||
    fail "shard $k did not serve the run to its end: $(tail -n 3 "$run/shard-$k.log")"
  # Every worker pushed this shard its slice, 20 iterations each.
  staged=$(sed -n "s/.*shard $k stopped by shard 0.*: \([0-9]*\) pushes staged.*/\1/p" "$run/shard-$k.log")
  [ "${staged:-0}" -ge 40 ] || fail "shard $k staged ${staged:-no} pushes, expected at least 40"
done

# Local SGD is refused by sharded servers: the run fails with that reason.
rc=0
"$bench" run "${small[@]}" --shards 2 --policies localsgd --out "$WORK/refused" \
  >"$WORK/refused.out" 2>"$WORK/refused.log" || rc=$?
expect_exit 1 "$rc" "dmlps-bench run --shards 2 --policies localsgd"
grep -q "does not work with sharded servers" "$WORK/refused.log" "$WORK/refused/localsgd-1/server.log" ||
  fail "the refusal's reason is missing: $(cat "$WORK/refused.log")"

# A shard count out of range is a flag error.
rc=0
"$bench" run --shards 0 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "dmlps-bench run --shards 0"
grep -q -- "--shards" "$WORK/err" || fail "no word of --shards: $(cat "$WORK/err")"
