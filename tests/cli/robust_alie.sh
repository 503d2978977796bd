# One of four workers pushes "a little is enough" (Baruch et al. 2019) with
# z = 3: each coordinate of the honest gradients' mean, as it estimates them
# from its own shard, moved by three of their standard deviations. Under BSP
# the median then keeps mlp:128 on Fashion-MNIST from 0.84; centred clipping
# with worker momentum after nearest-neighbour mixing (--aggregate
# cclip:auto) reaches it, and so it does when the worker flips the sign of
# its gradient at the norm bound (docs/algorithms-robustness.md, "Robust
# aggregation").
. "$(dirname "$0")/lib.sh"

# What cclip refuses (exit 64, one line), before any data is read.
server_refuses "cclip:TAU needs a clipping radius TAU > 0 or auto, not '0'" --aggregate cclip:0
server_refuses "cclip:TAU needs a clipping radius TAU > 0 or auto, not 'Auto'" --aggregate cclip:Auto
server_refuses "cclip:TAU:ITERS needs a whole number of iterations" --aggregate cclip:auto:0
server_refuses "cclip:TAU:ITERS needs a whole number of iterations" --aggregate cclip:1:0.5
server_refuses "keeps --momentum per worker as plain SGD momentum" --aggregate cclip:1 --nesterov
server_refuses "do not work with sharded servers" --aggregate cclip:1 --shard 0/2

[ -d /usr/share/datasets/fashion-mnist ] || { echo "skip: no Fashion-MNIST"; exit 77; }

# attack_run ATTACK ITERATIONS ARGS...: a server for 4 workers with ARGS,
# to 0.84 within ITERATIONS; 3 workers and one pushing ATTACK
# (dmlps-byzantine-worker); waits for all of them and sets SERVER_RC and
# ITERATION, the last evaluation's. Each run's server log is kept.
attack_run() {
  local attack=$1 iterations=$2
  shift 2
  [ -f "$WORK/server.log" ] && mv "$WORK/server.log" "$WORK/server-$(date +%s%N).log"
  attacked_run 120 "dmlps-byzantine-worker $attack @" --target-accuracy 0.84 \
    --max-iterations "$iterations" --eval-every 10 "$@"
}

# Four honest workers reach 0.84 in about 300 iterations here; with the
# attacker, cclip:auto takes about 370 (docs/algorithms-robustness.md).
attack_run alie:3 600 --aggregate cclip:auto
expect_exit 0 "$SERVER_RC" "dmlps-server with --aggregate cclip:auto under ALIE"
grep -q "reached accuracy" "$WORK/server.log" || fail "cclip:auto: the target was not reached"
alie_acc=$(last_accuracy)
alie_iter=$ITERATION

# The attack is real: the median, in as many iterations, does not reach it
# (the server exits 1).
attack_run alie:3 "$alie_iter" --aggregate median
expect_exit 1 "$SERVER_RC" "dmlps-server with the median under ALIE"
median_best=$(tail -n +2 "$WORK/server.tsv" | cut -f 3 | sort -g | tail -n 1)

# Sign flips at the norm bound: the worker's gradient reversed, at the
# norm every push is cut to.
attack_run signflip:10 600 --aggregate cclip:auto --max-update-norm 10
expect_exit 0 "$SERVER_RC" "dmlps-server with --aggregate cclip:auto under sign flips"
echo "ok: cclip:auto reached $alie_acc at iteration $alie_iter under ALIE (the median's best" \
  "in as many: $median_best), and $(last_accuracy) at iteration $ITERATION under sign flips"

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
