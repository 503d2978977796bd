"""dmlps.torch steps in train() mode and scores in eval() mode: a worker's
step runs the module in train() even when it was left in eval(); the
function dmlps.torch.evaluator hands to dmlps.Evaluator scores a module
with Dropout(p=0.9) or BatchNorm as the module in eval() mode scores,
leaves BatchNorm's running statistics alone and restores every
submodule's mode. No server: dmlps.Evaluator is replaced by a stand-in
that keeps the evaluate function, which the test calls itself."""

import copy

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch


class ModeProbe(torch.nn.Module):
    """The identity, noting whether each forward pass ran in train mode."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, inputs):
        self.seen.append(self.training)
        return inputs


def evaluate_function(module, x, y, batch):
    """The evaluate callback dmlps.torch.evaluator builds for module."""
    kept = []
    real = dmlps.Evaluator
    dmlps.Evaluator = lambda server, evaluate, **options: kept.append(evaluate)
    try:
        dmlps.torch.evaluator("tcp://127.0.0.1:1", module, torch.nn.CrossEntropyLoss(), x, y,
                              batch=batch)
    finally:
        dmlps.Evaluator = real
    return kept[0]


def eval_mode_score(module, x, y):
    """(accuracy, mean loss) of a copy of module in eval() mode, in one batch."""
    reference = copy.deepcopy(module).eval()
    with torch.no_grad():
        outputs = reference(x)
        loss = float(torch.nn.CrossEntropyLoss()(outputs, y))
    return float((outputs.argmax(dim=1) == y).float().mean()), loss


torch.manual_seed(0)
x = torch.randn(500, 8)
y = (x[:, 0] + x[:, 1] > 0).long()
nn = torch.nn

# A step runs in train() mode even when the module was left in eval().
probe = ModeProbe()
module = nn.Sequential(nn.Linear(8, 2), probe).eval()
computation = dmlps.torch.TorchComputation(module, nn.CrossEntropyLoss(), x, y)
params = computation.initial_values()
computation(params, np.arange(32, dtype=np.int64), np.zeros_like(params))
if probe.seen != [True]:
    harness.fail(f"a worker step ran with training={probe.seen} (want [True])")

# Scoring runs in eval() mode, batch by batch, and gives eval() mode's score.
cases = {
    "dropout": nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(p=0.9), nn.Linear(16, 2)),
    "batchnorm": nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(),
                               nn.Linear(16, 2)),
    "probe": nn.Sequential(nn.Linear(8, 2), ModeProbe()),
}
for name, module in cases.items():
    params = dmlps.torch.TorchComputation(module, nn.CrossEntropyLoss(), x, y).initial_values()
    want = eval_mode_score(module, x, y)
    module.train()
    module[0].eval()  # a mixed state, which scoring must give back as it was
    buffers = {k: v.clone() for k, v in module.state_dict().items()
               if k.endswith(("running_mean", "running_var", "num_batches_tracked"))}
    evaluate = evaluate_function(module, x, y, batch=128)
    scores = [evaluate(params) for _ in range(2)]
    print(f"{name}: scored {scores[0]}, eval() mode gives {want}")
    for accuracy, loss in scores:
        if abs(accuracy - want[0]) > 1e-6 or abs(loss - want[1]) > 1e-5 * max(1.0, want[1]):
            harness.fail(f"{name}: scored {(accuracy, loss)}, eval() mode gives {want}")
    if [m.training for m in module] != [False] + [True] * (len(module) - 1):
        harness.fail(f"{name}: the submodules' modes were not restored: "
                     f"{[m.training for m in module]}")
    for key, before in buffers.items():
        if not torch.equal(module.state_dict()[key], before):
            harness.fail(f"{name}: scoring changed the buffer {key}")
    if name == "probe" and module[1].seen != [False] * 8:
        harness.fail(f"probe: scoring ran with training={module[1].seen} (want False x 8)")

try:
    evaluate_function(cases["probe"], x, y, batch=0)
    harness.fail("batch=0 was accepted")
except ValueError as e:
    if "batch" not in str(e):
        harness.fail(f"batch=0 was refused with an unclear message: {e}")
print("ok")
