"""Under local SGD a PyTorch worker's local steps are its own torch.optim
optimizer's (DiLoCo's inner AdamW): with an outer SGD of rate 1 and no
momentum the server's model after each round is the worker's local model,
so a run of one worker must end where the same AdamW, fed the same batches
in plain PyTorch, ends; the BatchNorm buffers included."""

import copy
import os

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch

ROUNDS, H = 5, 4
x, y = harness.fashion_mnist()
torch.manual_seed(3)
# No bias before BatchNorm: its gradient is zero but for rounding, and
# Adam would step it by the sign of that rounding.
module = torch.nn.Sequential(torch.nn.Linear(784, 16, bias=False), torch.nn.BatchNorm1d(16),
                             torch.nn.ReLU(), torch.nn.Linear(16, 10))
replay = copy.deepcopy(module)
loss_fn = torch.nn.CrossEntropyLoss()


def adamw(m):
    return torch.optim.AdamW(m.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)


computation = dmlps.torch.TorchComputation(module, loss_fn, x, y, local_optimizer=adamw(module))
batches = []


def compute(params, sample_ids, grad):
    batches.append(np.array(sample_ids))
    return computation(params, sample_ids, grad)


save = os.path.join(harness.WORK, "local.model")
server = harness.Server("--model", "external", "--workers", "1", "--policy", "localsgd",
                        "--local-steps", str(H), "--outer-lr", "1", "--outer-momentum", "0",
                        "--batch", "32", "--max-iterations", str(ROUNDS), "--save-model", save)
worker = dmlps.Worker(server.endpoint, computation.num_samples, compute,
                      num_params=computation.num_params, layout=computation.layout(),
                      initial_values=computation.initial_values(),
                      local_step=computation.local_step)
threads = harness.run_workers([worker], 120)
if threads[0].error is not None:
    harness.fail(f"the worker raised {threads[0].error!r}")
if server.wait(30) != 0:
    harness.fail("dmlps-server failed")
if len(batches) < ROUNDS * H:
    harness.fail(f"{len(batches)} local steps, expected {ROUNDS * H}")

optimizer = adamw(replay)
replay.train()
for ids in batches[:ROUNDS * H]:
    optimizer.zero_grad()
    loss_fn(replay(x[ids]), y[ids]).backward()
    optimizer.step()
want = dmlps.torch.TorchComputation(replay, loss_fn, x, y).flatten().numpy()
got = np.fromfile(save, dtype="<f4")
error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
print(f"{ROUNDS} rounds of {H} AdamW steps: relative error {error:.2e} against plain PyTorch")
if not error < 1e-5:
    harness.fail(f"the server's model differs from plain PyTorch's AdamW by {error:.3g}")
if not np.array_equal(got[-1:], want[-1:]) or want[-1] != ROUNDS * H:
    harness.fail(f"num_batches_tracked: {got[-1]} on the server, {want[-1]} in PyTorch")

# A computation without a local optimizer has no local step to offer.
try:
    dmlps.torch.TorchComputation(module, loss_fn, x, y, local_optimizer="adamw")
    harness.fail("a local_optimizer that is not a torch optimizer was taken")
except ValueError as e:
    print(f"refused: {e}")
print("ok: local SGD's inner steps are the worker's own torch.optim optimizer's")
