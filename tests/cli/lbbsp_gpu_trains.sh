# A 4-worker cluster under lbbsp, the last worker 4x slower than the rest,
# trains mlp:128 on the full Fashion-MNIST to 0.84 test accuracy.
. "$(dirname "$0")/lib.sh"
SLOW_WORKER_ARGS=(--slowdown 4)
train_to_target 4 0.84 --policy lbbsp --lb-mode gpu --model mlp:128 --max-iterations 4000 --eval-every 25
grep -q "policy lbbsp" "$WORK/worker-0.log" || fail "the workers did not run lbbsp"
