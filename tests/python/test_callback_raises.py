"""A compute callback that raises ends its worker, and only it: run() raises
that very exception, the server sees the worker leave (not time out), and
the run goes on as the policy says; under BSP with 2 workers the other one
trains on alone to the target. Nothing hangs: every wait is bounded."""

import time

import harness
import torch

import dmlps
import dmlps.torch


class Broken(Exception):
    pass


raised = []


def breaking(computation, after):
    """The computation's callback, raising Broken from its call `after` on."""
    calls = [0]

    def compute(params, sample_ids, grad):
        calls[0] += 1
        if calls[0] > after:
            error = Broken(f"step {calls[0]} failed on purpose")
            raised.append(error)
            raise error
        return computation(params, sample_ids, grad)

    return compute


x, y = harness.fashion_mnist()
server = harness.Server("--workers", "2", "--policy", "bsp", "--model", "mlp:128",
                        "--target-accuracy", "0.75", "--max-iterations", "2000",
                        "--eval-every", "10", "--worker-timeout", "60")
healthy = harness.torch_workers(server.endpoint, 1)[0]
computation = dmlps.torch.TorchComputation(dmlps.torch.mlp(784, [128], 10),
                                           torch.nn.CrossEntropyLoss(), x, y)
broken = dmlps.Worker(server.endpoint, computation.num_samples, breaking(computation, 5),
                      num_params=computation.num_params)
start = time.monotonic()
threads = harness.run_workers([healthy, broken], 120)
if server.wait(30) != 0:
    harness.fail("dmlps-server failed")
if threads[0].error is not None:
    harness.fail(f"the healthy worker raised {threads[0].error!r}")
if len(raised) != 1 or threads[1].error is not raised[0]:
    harness.fail(f"run() raised {threads[1].error!r}, not the callback's exception {raised}")
log = server.log_text()
if "lost worker" not in log or "Broken: step 6 failed on purpose;" not in log:
    harness.fail("the server did not see the broken worker leave with its error")
if "reached accuracy" not in log:
    harness.fail("the run did not go on to the target without the broken worker")
print(f"ok: {threads[1].error!r} in {time.monotonic() - start:.1f} s; "
      f"the other worker went on: {threads[0].report['stop_reason']}")

# A callback returning something that is not a number fails the same way.
server = harness.Server("--workers", "1", "--policy", "asp", "--model", "softmax",
                        "--max-iterations", "50", name="bad-return")
bad = dmlps.Worker(server.endpoint, 10, lambda params, ids, grad: None,
                   num_params=7850)
thread = harness.run_workers([bad], 60)[0]
if not isinstance(thread.error, TypeError):
    harness.fail(f"a non-numeric loss raised {thread.error!r}")
server.process.kill()
print(f"ok: {thread.error!r}")
