# One of four workers pushes "a little is enough" (Baruch et al. 2019) with
# z = 3: each coordinate of the honest gradients' mean, as it estimates them
# from its own shard, moved by three of their standard deviations. Under BSP
# the median then keeps mlp:128 on Fashion-MNIST from 0.84; centred clipping
# with worker momentum (--aggregate cclip) reaches it (docs/algorithms-robustness.md,
# "Robust aggregation").
. "$(dirname "$0")/lib.sh"

# What cclip refuses (exit 64, one line), before any data is read.
server_refuses "cclip:TAU needs a clipping radius TAU > 0, not '0'" --aggregate cclip:0
server_refuses "cclip:TAU:ITERS needs a whole number of iterations" --aggregate cclip:1:0.5
server_refuses "keeps --momentum per worker as plain SGD momentum" --aggregate cclip:1 --nesterov
server_refuses "do not work with sharded servers" --aggregate cclip:1 --shard 0/2

[ -d /usr/share/datasets/fashion-mnist ] || { echo "skip: no Fashion-MNIST"; exit 77; }

# alie_run ITERATIONS ARGS...: a server for 4 workers with ARGS, to 0.84
# within ITERATIONS; 3 workers and the ALIE one; waits for all of them and
# sets SERVER_RC and ITERATION, the last evaluation's.
alie_run() {
  local iterations=$1 pids=() pid
  shift
  start_server --workers 4 --policy bsp --model mlp:128 --target-accuracy 0.84 \
    --max-iterations "$iterations" --eval-every 10 "$@"
  "$TEST_BIN/dmlps-byzantine-worker" alie:3 "$ENDPOINT" >"$WORK/alie.out" 2>"$WORK/alie.log" &
  pids+=("$!")
  CHILDREN+=("$!")
  for r in 0 1 2; do
    start_worker "worker-$r"
    pids+=("$WORKER_PID")
  done
  wait_for "$SERVER_PID" 120
  SERVER_RC=$RC
  for pid in "${pids[@]}"; do
    wait_for "$pid" 30
    expect_exit 0 "$RC" "worker (pid $pid)"
  done
  ITERATION=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
}

# Four honest workers reach 0.84 in about 300 iterations here; with the
# attacker, centred clipping takes about 400.
alie_run 600 --aggregate cclip:2
expect_exit 0 "$SERVER_RC" "dmlps-server with --aggregate cclip:2"
grep -q "reached accuracy" "$WORK/server.log" || fail "cclip: the target was not reached"
cclip_acc=$(last_accuracy)
cclip_iter=$ITERATION

# The attack is real: the median, in as many iterations, does not reach it
# (the server exits 1).
mv "$WORK/server.log" "$WORK/cclip-server.log"
alie_run "$cclip_iter" --aggregate median
expect_exit 1 "$SERVER_RC" "dmlps-server with the median under ALIE"
median_best=$(tail -n +2 "$WORK/server.tsv" | cut -f 3 | sort -g | tail -n 1)
echo "ok: cclip:2 reached $cclip_acc at iteration $cclip_iter;" \
  "the median's best in as many iterations: $median_best"

# share/dmlps/experiments/robust-attacks.sh, shrunk to a target no run
# reaches in 20 iterations: one row per attack, every run counted as not
# reached (the slowest), no ratio.
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/robust-attacks.sh"
"$script" --bin "$BIN" --test-bin "$TEST_BIN" --repeat 1 --attacks honest,signflip \
  --target 0.99 --max-iterations 20 --out "$WORK/attacks" >"$WORK/attacks.tsv" \
  2>"$WORK/attacks.log" || fail "robust-attacks.sh exited $?: $(cat "$WORK/attacks.log")"
expect_tsv "$WORK/attacks.tsv" $'attack\truns\treached\titerations_median\tratio\titerations' 2
for attack in honest signflip; do
  grep -qx "$attack"$'\t1\t0\tinf\t-\t-' "$WORK/attacks.tsv" || fail "no $attack row of a run that missed"
done
[ -s "$WORK/attacks/signflip-seed1/attacker.out" ] || fail "the attacker did not run"
grep -q "^iterations"$'\t'"20$" "$WORK/attacks/honest-seed1/report" || fail "the honest run did not stop at 20"
