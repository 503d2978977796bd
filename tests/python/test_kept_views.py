"""Arrays a callback keeps outlive its call, its worker and run(): params,
sample_ids and grad from compute, params and grad from local_step, and an
Evaluator's snapshot, kept past run() and read and written after the
workers are gone (del, gc.collect(), memory churned), still hold what they
held when their call returned; each call had arrays of its own, so a kept
one never changes under a later step. params and the snapshot stay
read-only, grad takes writes. The workers run in a child process, so that
a crash (an array over freed memory) fails the test rather than ending
it. A grad the callback resizes in place is refused, not read past its
end. Every wait is bounded."""

import os
import subprocess
import sys

MODEL = "mlp:128"
PARAMS = 101770  # mlp:128 over 784 features and 10 classes


def child(sync_endpoint, local_endpoint):
    """Trains on both servers, keeping every array, and checks them after."""
    import gc
    import threading

    import numpy as np

    import dmlps

    x, y = dmlps.load_train("fashion-mnist")
    kept = []  # (what, the array, a copy as its call left it)

    def keep(what, array):
        kept.append((what, array, array.copy()))

    def compute(params, sample_ids, grad):
        loss, g = dmlps.model_loss_and_gradient(MODEL, params, x[sample_ids], y[sample_ids], 10)
        grad[:] = g
        keep("params", params)
        keep("sample_ids", sample_ids)
        keep("grad", grad)
        return loss

    def local_step(params, grad):
        params -= 0.1 * grad
        keep("local_step params", params)
        keep("local_step grad", grad)

    def evaluate(params):
        keep("snapshot", params)
        return 0.5, 1.0

    worker = dmlps.Worker(sync_endpoint, len(x), compute, num_params=PARAMS)
    evaluator = dmlps.Evaluator(sync_endpoint, evaluate)
    thread = threading.Thread(target=evaluator.run, daemon=True)
    thread.start()
    worker.run()
    thread.join(60)
    if thread.is_alive():
        sys.exit("FAIL: the evaluator did not return within 60 s")
    local = dmlps.Worker(local_endpoint, len(x), compute, num_params=PARAMS,
                         local_step=local_step)
    local.run()
    del worker, evaluator, local, thread, compute, local_step, evaluate
    gc.collect()
    # Whatever the workers freed is handed out again and overwritten.
    churn = [np.full(PARAMS, 7e7, np.float32) for _ in range(64)]
    del churn

    counts = {}
    changed = {}  # what: the largest change of a kept one
    for what, array, copy in kept:
        counts[what] = counts.get(what, 0) + 1
        if not np.array_equal(array, copy):
            changed[what] = max(changed.get(what, 0.0), float(np.abs(array - copy).max()))
    if changed:
        sys.exit(f"FAIL: kept arrays changed after their calls (by at most): {changed}")
    for what in ("params", "sample_ids", "grad", "local_step params", "local_step grad",
                 "snapshot"):
        if counts.get(what, 0) < 2:
            sys.exit(f"FAIL: too few calls kept a {what}: {counts}")
    if len({array.ctypes.data for _, array, _ in kept}) != len(kept):
        sys.exit("FAIL: two calls were handed the same memory while the first's was kept")
    params = [array for what, array, _ in kept if what == "params"]
    if np.array_equal(params[0], params[-1]):
        sys.exit("FAIL: the model did not move; the comparison would prove nothing")
    for what, array, _ in kept:
        writable = what in ("grad", "local_step params")
        if array.flags.writeable != writable:
            sys.exit(f"FAIL: a kept {what} is {'' if writable else 'not '}read-only")
        if writable:
            array[:] = 95000.0
    if not all((array == 95000.0).all() for what, array, _ in kept if array.flags.writeable):
        sys.exit("FAIL: a write into a kept array did not stay there")
    print(f"ok: {len(kept)} kept arrays {counts} hold their calls' values after run()")


if len(sys.argv) == 4 and sys.argv[1] == "--child":
    child(sys.argv[2], sys.argv[3])
    sys.exit(0)

import harness  # noqa: E402 (the child needs neither it nor PyTorch)

sync_server = harness.Server("--workers", "1", "--policy", "bsp", "--model", MODEL,
                             "--max-iterations", "20", "--eval-every", "5", "--evaluator",
                             name="sync")
local_server = harness.Server("--workers", "1", "--policy", "localsgd", "--local-steps", "2",
                              "--model", MODEL, "--max-iterations", "5", name="local")
try:
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                            sync_server.endpoint, local_server.endpoint],
                           capture_output=True, text=True, timeout=180)
except subprocess.TimeoutExpired:
    harness.fail("the child was still running after 180 s")
sys.stdout.write(child.stdout)
if child.returncode != 0:
    sys.stderr.write(child.stderr[-3000:])
    if child.returncode < 0:
        harness.fail(f"the child died of signal {-child.returncode} reading its kept arrays")
    harness.fail(f"the child exited {child.returncode}")
for server in (sync_server, local_server):
    if server.wait(30) != 0:
        harness.fail("a dmlps-server failed")

# A grad the callback resizes in place (its memory moved, shorter) is not
# read back: run() raises instead.
import dmlps  # noqa: E402

server = harness.Server("--workers", "1", "--policy", "bsp", "--model", "softmax",
                        "--max-iterations", "5", name="resized")


def resizing(params, sample_ids, grad):
    grad[:] = 0
    grad.resize(10, refcheck=False)
    return 1.0


thread = harness.run_workers([dmlps.Worker(server.endpoint, 100, resizing, num_params=7850)],
                             60)[0]
server.process.kill()
if not isinstance(thread.error, dmlps.InvalidArgumentError) or "resized" not in str(thread.error):
    harness.fail(f"a grad resized in place gave {thread.error!r}")
print(f"ok: a grad resized in place: {thread.error!r}")
