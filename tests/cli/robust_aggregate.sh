# One of four workers pushes garbage every step (values uniform in
# [-1000, 1000), a full batch's weight). Under BSP with --aggregate median
# the other three still train mlp:128 to 0.84 on Fashion-MNIST; with the
# plain mean the same worker keeps the model from it.
. "$(dirname "$0")/lib.sh"

# Rules the flags refuse (exit 64, one line), before any data is read.
server_refuses "expected mean, median, trimmed-mean:F or cclip:TAU" --aggregate mode
server_refuses "trimmed-mean:F needs a fraction F in \[0, 0.5)" --aggregate trimmed-mean:0.5
server_refuses "needs a policy that aggregates rounds" --aggregate median --policy asp
server_refuses "do not work with sharded servers" --aggregate median --shard 0/2
server_refuses "max-update-norm" --max-update-norm -1

[ -d /usr/share/datasets/fashion-mnist ] || { echo "skip: no Fashion-MNIST"; exit 77; }

# garbage_run ARGS...: a server for 4 workers with ARGS, 3 real workers and
# the garbage one, which the server must stop; waits for all of them.
garbage_run() { attacked_run 300 "dmlps-hostile-worker garbage @ 280" "$@"; }

start=$SECONDS
garbage_run --aggregate median --target-accuracy 0.84 --max-iterations 4000 --eval-every 25
expect_exit 0 "$SERVER_RC" "dmlps-server with --aggregate median"
grep -q "reached accuracy" "$WORK/server.log" || fail "median: the target was not reached"
median_acc=$(last_accuracy)
median_s=$((SECONDS - start))
median_iter=$ITERATION

# The attack is real: with the mean, the same worker and as many
# iterations as the median needed, the target is not reached (the server
# exits 1).
mv "$WORK/server.log" "$WORK/median-server.log"
garbage_run --target-accuracy 0.84 --max-iterations "$median_iter" --eval-every 25
expect_exit 1 "$SERVER_RC" "dmlps-server with the mean under the garbage worker"
mean_best=$(tail -n +2 "$WORK/server.tsv" | cut -f 3 | sort -g | tail -n 1)
echo "ok: median reached $median_acc at iteration $median_iter in ${median_s}s;" \
  "the mean's best in as many iterations: $mean_best"
