# A 4-worker cluster under async-localsgd with DyLU and delayed Nesterov, the
# last worker 4x slower than the rest, trains mlp:128 on the full
# Fashion-MNIST to 0.84 test accuracy; nobody waits for the straggler.
. "$(dirname "$0")/lib.sh"
SLOW_WORKER_ARGS=(--slowdown 4)
train_to_target 4 0.84 --policy async-localsgd --local-steps 4 --dylu --lr 0.1 --momentum 0 \
  --outer-lr 1 --outer-momentum 0.5 --model mlp:128 --max-iterations 2000 --eval-every 5
grep -q "policy async-localsgd" "$WORK/worker-0.log" || fail "the workers did not run it"
# The fast workers did not wait for the slow one: they took more steps (not
# 4x as many: on a loaded machine messaging takes a good share of a fast
# worker's time).
steps() { grep -oE "[0-9]+ steps," "$WORK/$1.log" | tail -n 1 | cut -d ' ' -f 1; }
fast=$(steps worker-0)
slow=$(steps worker-3)
[ -n "$fast" ] && [ -n "$slow" ] || fail "the workers logged no step counts"
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f >= 1.5 * s) }' ||
  fail "worker-0 took $fast steps, the 4x slower worker-3 $slow"
