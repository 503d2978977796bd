# Under Debian's Open MPI, one command line starts a whole cluster:
# dmlps-launch makes launcher rank 0 the server (counting the other 3 as its
# workers) and ranks 1..3 workers 0..2 that find it on 127.0.0.1. The
# 1-server, 3-worker BSP cluster trains mlp:128 to 0.84 test accuracy.
# Skips (77) where mpirun is not installed.
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun (Debian's openmpi-bin) is not installed"; exit 77; }
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# The ranks are mpirun's children, not ours: found by the folder unique to
# this run that their command lines name, and killed by id.
launched_pids() {
  local p
  for p in /proc/[0-9]*; do
    if grep -qsaF -- "$WORK/" "$p/cmdline"; then echo "${p#/proc/}"; fi
  done
  return 0
}
stop_launched() {
  local pid
  for pid in $(launched_pids); do kill -9 "$pid" 2>/dev/null || true; done
}
on_exit() {
  local rc=$?
  set +e
  stop_launched
  (exit "$rc"); cleanup  # lib.sh's; it reads the exit status from $?
}
trap on_exit EXIT

# A port nothing listens on (another test may still take it first; then the
# server says so and the test fails rather than hangs).
port=$((20000 + RANDOM % 40000))
if command -v ss >/dev/null; then
  while ss -Htln "sport = :$port" | grep -q .; do port=$((20000 + RANDOM % 40000)); done
fi

target=0.84
start=$(date +%s.%N)
timeout -s TERM -k 10 300 mpirun --oversubscribe --allow-run-as-root --bind-to none -np 4 \
  "$src/share/dmlps/launch/dmlps-launch" --bin "$BIN" --port "$port" \
    --policy bsp --model mlp:128 --target-accuracy "$target" --max-iterations 4000 \
    --eval-every 25 --report "$WORK/report" \
  --worker-args --trace "$WORK/rank%r.trace" \
  >"$WORK/server.tsv" 2>"$WORK/mpirun.log" || rc=$?
seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
expect_exit 0 "${rc:-0}" "mpirun"
[ -z "$(launched_pids)" ] || fail "processes of the run outlived mpirun: $(launched_pids)"

# The server counted its workers from the launcher; each worker asked for
# its launcher rank - 1 and got it.
grep -q "dmlps-server: info: rank 0 of 4 under openmpi" "$WORK/mpirun.log" ||
  fail "the server did not see itself as rank 0 of 4 under Open MPI"
grep -q "all 3 workers ready" "$WORK/mpirun.log" ||
  fail "the server did not wait for 3 workers"
for r in 1 2 3; do
  [ -s "$WORK/rank$r.trace" ] || fail "rank $r wrote no trace"
  node=$("$BIN/dmlps-trace" tsv "$WORK/rank$r.trace" | awk -F '\t' 'NR == 2 { print $2 }')
  [ "$node" = "worker-$((r - 1))" ] || fail "launcher rank $r ran as $node, not worker-$((r - 1))"
done
grep -q $'^target_reached\t1$' "$WORK/report" || fail "the target was not reached"
acc=$(tail -n 1 "$WORK/server.tsv" | cut -f 3)
awk -v a="$acc" -v t="$target" 'BEGIN { exit !(a >= t) }' || fail "final accuracy $acc is below $target"
echo "mpirun -np 4: 1 server, 3 workers reached accuracy $acc in $seconds s (whole job): $(tail -n 1 "$WORK/server.tsv")"

# --shards 2: launcher ranks 0 and 1 are server shards (ports P and P+1),
# ranks 2..4 workers 0..2; each shard saves its slice, and the slices make
# the whole model.
port2=$((port + 2))
rc=0
timeout -s TERM -k 10 120 mpirun --oversubscribe --allow-run-as-root --bind-to none -np 5 \
  "$src/share/dmlps/launch/dmlps-launch" --bin "$BIN" --port "$port2" --shards 2 \
    --policy bsp --model mlp:32 --max-iterations 100 --eval-every 50 \
    --save-model "$WORK/part%r" \
  --shard-args --save-model "$WORK/part%r" \
  >"$WORK/sharded.tsv" 2>"$WORK/mpirun-sharded.log" || rc=$?
expect_exit 0 "$rc" "mpirun -np 5 dmlps-launch --shards 2"
[ -z "$(launched_pids)" ] || fail "processes of the sharded run outlived mpirun: $(launched_pids)"
grep -q "server shard 1 .* registered" "$WORK/mpirun-sharded.log" ||
  fail "shard 1 did not register with shard 0"
grep -q "all 3 workers ready" "$WORK/mpirun-sharded.log" || fail "shard 0 did not count 3 workers"
bytes=$(( $(stat -c %s "$WORK/part0") + $(stat -c %s "$WORK/part1") ))
[ "$bytes" -eq $(( (784 * 32 + 32 + 32 * 10 + 10) * 4 )) ] ||
  fail "the two shards' slices hold $bytes bytes, not the whole model"
echo "mpirun -np 5 --shards 2: 2 server shards, 3 workers: $(tail -n 1 "$WORK/sharded.tsv")"
