# docs/algorithms-local-sgd.md, "Local SGD": with one local step, an outer SGD of rate
# 1 and no momentum, localsgd trains the model bsp trains on the same seed.
# Up to float rounding (the workers send θ − (θ − lr·g), which rounds
# differently from lr·g), so the saved models are compared to a tolerance;
# --deterministic sums each round in rank order under both.
. "$(dirname "$0")/lib.sh"
command -v /usr/bin/python3 >/dev/null || exit 77
run() {
  local name=$1
  shift
  start_server --workers 2 --model mlp:32 --momentum 0 --max-iterations 30 --eval-every 10 \
    --deterministic --save-model "$WORK/$name.bin" "$@"
  local pids=()
  for r in 0 1; do
    start_worker "$name-$r"
    pids+=("$WORKER_PID")
  done
  wait_for "$SERVER_PID" 120
  expect_exit 0 "$RC" "dmlps-server ($name)"
  for pid in "${pids[@]}"; do
    wait_for "$pid" 30
    expect_exit 0 "$RC" "dmlps-worker ($name)"
  done
  cp "$WORK/server.tsv" "$WORK/$name.tsv"
}
run bsp --policy bsp
run local --policy localsgd --local-steps 1 --outer-lr 1 --outer-momentum 0
run diloco --policy localsgd --local-steps 1 --outer-lr 0.7 --outer-momentum 0.9
/usr/bin/python3 - "$WORK" <<'PY' || fail "the models differ"
import sys
import numpy as np
w = sys.argv[1]
bsp, local, diloco = (np.fromfile(f"{w}/{n}.bin", dtype="<f4") for n in ("bsp", "local", "diloco"))
assert bsp.size > 1000 and bsp.size == local.size == diloco.size, (bsp.size, local.size)
moved = np.abs(bsp - np.fromfile(f"{w}/diloco.bin", dtype="<f4")).max()
diff = np.abs(bsp - local).max()
print(f"max |bsp - localsgd| = {diff:.3g}; with an outer Nesterov step: {moved:.3g}")
assert diff < 1e-4, diff
assert moved > 100 * max(diff, 1e-7), moved  # the comparison can tell models apart
# The same accuracy at the iterations both evaluated (the first and the last
# always; one in between may be skipped under load), to a few test samples
# of 10000 (a sample on the boundary may fall either way).
acc = [{l.split("\t")[1]: float(l.split("\t")[2])
        for l in open(f"{w}/{n}.tsv").read().split("\n")[1:] if l} for n in ("bsp", "local")]
both = set(acc[0]) & set(acc[1])
assert {"0", "30"} <= both, acc
for it in both:
    assert abs(acc[0][it] - acc[1][it]) <= 5e-4, (it, acc)
PY
