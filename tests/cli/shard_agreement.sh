# share/dmlps/experiments/shard-agreement.sh shrunk: 2 workers, 10
# iterations, 2 shards. The real run must be sharded (shard 1 started,
# registered with shard 0 and stopped by it), the simulated one too, and
# both finish; a shard count below 2 is refused.
. "$(dirname "$0")/lib.sh"
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/shard-agreement.sh"

"$script" --bin "$BIN" --repeat 1 --out "$WORK/out" --shards 2 --policies bsp -- --workers 2 \
  --slowdown 1,2 --target 0 --max-iterations 10 --batch 32 --format tsv >"$WORK/table" \
  2>"$WORK/run.log" || fail "shard-agreement.sh exited $?: $(tail -n 3 "$WORK/run.log")"
cat "$WORK/table"
grep -qx "== real, 2 shards" "$WORK/table" || fail "no real table"
grep -qx "== simulated, 2 shards" "$WORK/table" || fail "no simulated table"
[ "$(grep -c $'^bsp\t1\t1\t' "$WORK/table")" -eq 2 ] || fail "not two finished bsp rows"
log="$WORK/out/runs-2/bsp-1/shard-1.log"
[ -s "$log" ] || fail "shard 1 was not started: no $log"
grep -q "registering with shard 0" "$log" || fail "shard 1 did not join shard 0: $(cat "$log")"
grep -q "stopped by shard 0" "$log" || fail "shard 1 was not stopped by shard 0: $(cat "$log")"
rc=0
"$script" --bin "$BIN" --shards 1 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "shard-agreement.sh --shards 1"
grep -q "not a count from 2 to 64" "$WORK/err" || fail "unclear error: $(cat "$WORK/err")"
echo "ok"
