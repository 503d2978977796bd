"""A callback that writes into an earlier step's grad, kept from that
step's call, changes nothing the worker pushes. Each step fills its own
grad, then writes 95000.0 over the grads of the two steps before; the
server's trained model (--save-model, --deterministic, one worker) is bit
for bit that of the same run without the stray writes, under BSP (pull,
push) and under ASP (the pull sent with the push). Every wait is bounded."""

import os

import harness
import numpy as np

import dmlps

MODEL = "mlp:128"
PARAMS = 101770  # mlp:128 over 784 features and 10 classes
STRAY = 95000.0

x, y = (t.numpy() for t in harness.fashion_mnist())


def train(policy, stray):
    """The model a run of 40 iterations under `policy` saves, its callback
    writing STRAY into earlier grads when `stray`."""
    tag = f"{policy}-{'stray' if stray else 'clean'}"
    save = os.path.join(harness.WORK, f"{tag}.model")
    server = harness.Server("--workers", "1", "--policy", policy, "--model", MODEL,
                            "--max-iterations", "40", "--eval-every", "40", "--deterministic",
                            "--save-model", save, name=tag)
    earlier = []

    def compute(params, sample_ids, grad):
        loss, g = dmlps.model_loss_and_gradient(MODEL, params, x[sample_ids], y[sample_ids], 10)
        grad[:] = g
        if stray:
            for old in earlier:
                old[:] = STRAY
        earlier.append(grad)
        del earlier[:-2]
        return loss

    worker = dmlps.Worker(server.endpoint, len(x), compute, num_params=PARAMS)
    thread = harness.run_workers([worker], 120)[0]
    if thread.error is not None:
        harness.fail(f"{tag}: the worker raised {thread.error!r}")
    if server.wait(30) != 0:
        harness.fail(f"{tag}: dmlps-server failed")
    if thread.report["steps"] < 40:
        harness.fail(f"{tag}: only {thread.report['steps']} steps")
    return np.fromfile(save, "<f4")


for policy in ("bsp", "asp"):
    clean = train(policy, False)
    stray = train(policy, True)
    largest = float(np.abs(stray).max())
    print(f"{policy}: largest weight {largest:.4g} with stray writes, "
          f"{float(np.abs(clean).max()):.4g} without")
    if clean.shape != (PARAMS,) or stray.shape != (PARAMS,):
        harness.fail(f"{policy}: saved models of {clean.shape} and {stray.shape} floats")
    if not np.array_equal(clean, stray):
        harness.fail(f"{policy}: the stray writes reached the server (largest weight "
                     f"{largest:.4g}, {int((clean != stray).sum())} weights differ)")
print("ok: writes into earlier steps' grads never reached the server")
