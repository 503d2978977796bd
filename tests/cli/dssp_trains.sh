# A 4-worker cluster under dssp, the last worker 4x slower than the rest,
# trains mlp:128 on the full Fashion-MNIST to 0.84 test accuracy.
. "$(dirname "$0")/lib.sh"
SLOW_WORKER_ARGS=(--slowdown 4)
train_to_target 4 0.84 --policy dssp --staleness-low 1 --staleness-high 4 --model mlp:128 \
  --max-iterations 4000 --eval-every 25
grep -q "policy dssp:1-4" "$WORK/worker-0.log" || fail "the workers did not run dssp"
