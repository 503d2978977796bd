# The README's main job, shrunk: the side-by-side script runs each policy as
# a real cluster, repeats interleaved, and prints one row per run plus a
# median row per policy.
. "$(dirname "$0")/lib.sh"
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/side-by-side.sh"
"$script" --bin "$BIN" --workers 2 --slowdown 1,3 --policies bsp,ssp:1 --target 0.75 \
  --repeat 2 --max-seconds 120 --batch 64 --lr 0.05 --eval-every 20 --out "$WORK/runs" >"$WORK/table.tsv" 2>"$WORK/script.log" ||
  fail "side-by-side.sh exited $?"
cat "$WORK/table.tsv"
head -n 1 "$WORK/table.tsv" | grep -q $'^policy\trun\tseconds_to_target' || fail "no header"
[ "$(grep -c $'\treached$' "$WORK/table.tsv")" -eq 4 ] || fail "not every run reached 0.75"
grep -q $'^bsp\tmedian\t[0-9.]*\t[0-9]*\t-\t0\.[0-9]*\t0\.[0-9]*\t0\treached 2/2$' "$WORK/table.tsv" ||
  fail "no BSP median row"
grep -q $'^ssp:1\tmedian\t' "$WORK/table.tsv" || fail "no SSP median row"
grep -q "policy ssp:1" "$WORK/runs/ssp-1-2/worker-0.log" || fail "ssp:1 did not reach the workers"
grep -q "batch 64" "$WORK/runs/bsp-1/worker-0.log" || fail "--batch did not reach the workers"
grep -q $'\t20\t' "$WORK/runs/bsp-1/server.tsv" || fail "--eval-every did not reach the server"
"$script" --workers 3 --slowdown 1,2 --bin "$BIN" >/dev/null 2>"$WORK/err" && fail "a bad --slowdown was accepted"
grep -q "2 factors for 3 workers" "$WORK/err" || fail "unclear error: $(cat "$WORK/err")"
echo "ok"
