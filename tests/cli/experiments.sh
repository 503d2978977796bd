# The experiment scripts in share/dmlps/experiments: each explains itself,
# refuses what it does not know, and one runs end to end, shrunk.
. "$(dirname "$0")/lib.sh"
dir="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments"
for script in "$dir"/*.sh; do
  name=$(basename "$script")
  [ "$name" = common.sh ] && continue
  "$script" --help >"$WORK/help" 2>&1 || fail "$name --help exited $?"
  grep -q "^usage: $name" "$WORK/help" || fail "$name --help: $(head -n 2 "$WORK/help")"
  rc=0
  "$script" --bogus >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "$name --bogus"
  grep -q "unknown option '--bogus'" "$WORK/err" || fail "$name: unclear error: $(cat "$WORK/err")"
done
# dmlps-bench run options after -- reach it: 2 workers, 10 iterations.
"$dir/abps-vs-ssp.sh" --bin "$BIN" --repeat 1 --out "$WORK/out" -- --workers 2 --slowdown 1,2 \
  --target 0 --max-iterations 10 --batch 32 --format tsv >"$WORK/table" 2>"$WORK/run.log" ||
  fail "abps-vs-ssp.sh exited $?"
cat "$WORK/table"
for policy in bsp abps ssp:3 asp; do
  grep -q "^$policy"$'\t1\t1\t' "$WORK/table" || fail "no finished $policy row"
done
echo "ok"
