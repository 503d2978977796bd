# share/dmlps/experiments/shard0-kill.sh shrunk: shard 0 of 2, checkpointing
# every iteration, killed with kill -9 at 8 random points in a row, each
# run resuming the files the kill before left. Every kill must resume. A
# checkpoint is on its way at most points; a kill while shard 0's writes
# ran behind the orders used to leave shard 1's two files both newer than
# shard 0's (exit 65 on resuming: about one kill in three).
. "$(dirname "$0")/lib.sh"
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/shard0-kill.sh"
rc=0
"$script" --kills 8 --max-delay 1.5 --bin "$BIN" --out "$WORK/kills" >"$WORK/kills.txt" 2>&1 || rc=$?
cat "$WORK/kills.txt"
expect_exit 0 "$rc" "shard0-kill.sh"
grep -qE '^8 kills of shard 0: [0-9]+ resumed .* 0 not resumable$' "$WORK/kills.txt" ||
  fail "not every kill resumed"
