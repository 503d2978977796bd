# A 4-worker cluster under localsgd (DiLoCo's rounds of H local steps and an
# outer Nesterov step), the last worker 4x slower than the rest, trains
# mlp:128 on the full Fashion-MNIST to 0.84 test accuracy; each push stands
# for H local steps.
. "$(dirname "$0")/lib.sh"
SLOW_WORKER_ARGS=(--slowdown 4)
# Inner SGD without momentum; outer Nesterov 0.5 at rate 1: about the step of
# BSP's lr 0.05 with momentum 0.9 per local step.
train_to_target 4 0.84 --policy localsgd --local-steps 4 --lr 0.1 --momentum 0 --outer-lr 1 \
  --outer-momentum 0.5 --model mlp:128 --max-iterations 1000 --eval-every 5
grep -q "policy localsgd" "$WORK/worker-0.log" || fail "the workers did not run localsgd"
# The workers took 4 local steps per push: the server's rounds times 4 (the
# summary's count: training goes on while the last snapshot is evaluated).
rounds=$(grep "summary:" "$WORK/server.log" | grep -oE "[0-9]+ iterations" | cut -d ' ' -f 1)
steps=$(grep -oE "[0-9]+ steps," "$WORK/worker-0.log" | tail -n 1 | cut -d ' ' -f 1)
[ -n "$steps" ] || fail "worker-0 logged no step count"
awk -v s="$steps" -v r="$rounds" 'BEGIN { exit !(s >= 4 * r && s <= 4 * (r + 1)) }' ||
  fail "worker-0 took $steps local steps in $rounds rounds of 4"
