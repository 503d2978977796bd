"""An external model pinned by the server (docs/security.md): with
``--initial FILE`` (dmlps.torch.save_initial of the user's module) the run
starts from the file's layout and values, whatever the workers announce,
and a worker announcing another layout is refused; the file's checks
refuse one that holds NaN."""

import os
import subprocess

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch


def network(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.BatchNorm1d(16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 10))


x, y = harness.fashion_mnist()
loss_fn = torch.nn.CrossEntropyLoss()
initial = dmlps.torch.save_initial(network(1), os.path.join(harness.WORK, "initial.ckpt"))
pinned = dmlps.read_checkpoint(initial)
want = np.asarray(pinned["params"])

# Two workers announce values of their own (seeds 2 and 3); the server
# keeps the file's. A learning rate of 1e-30 leaves the model where it
# started, so the saved model is the one the run started from.
saved = os.path.join(harness.WORK, "saved.bin")
server = harness.Server("--model", "external", "--initial", initial, "--workers", "2",
                        "--policy", "bsp", "--lr", "1e-30", "--momentum", "0",
                        "--max-iterations", "3", "--save-model", saved)
workers = [dmlps.torch.worker(server.endpoint, network(2 + k), loss_fn, x, y) for k in range(2)]
harness.train(server, workers, 120)
got = np.fromfile(saved, dtype="<f4")
weights = sum(p.numel() for p in network(1).parameters())
if got.shape != want.shape:
    harness.fail(f"saved {got.shape} floats, the file has {want.shape}")
if not np.allclose(got[:weights], want[:weights], atol=1e-6):
    harness.fail("the run did not start from the --initial file's parameters")
theirs = dmlps.read_checkpoint(
    dmlps.torch.save_initial(network(2), os.path.join(harness.WORK, "theirs.ckpt")))["params"]
if np.allclose(got[:weights], np.asarray(theirs)[:weights], atol=1e-6):
    harness.fail("the saved model is a worker's: the test shows nothing")
with open(server.log) as f:
    log = f.read()
if "the external model from" not in log or "announced the external model" in log:
    harness.fail("the server did not take the model from the file")

# Another layout is refused; a file holding NaN is refused at start.
server = harness.Server("--model", "external", "--initial", initial, "--workers", "1",
                        "--max-seconds", "20", name="other")
other = torch.nn.Sequential(torch.nn.Linear(784, 10))
try:
    dmlps.torch.worker(server.endpoint, other, loss_fn, x, y).run()
    harness.fail("a worker of another layout was admitted")
except dmlps.RefusedError as e:
    if "layout is not the external model's" not in str(e):
        harness.fail(f"the refusal does not say why: {e}")
server.process.kill()
values = want.copy()
values[3] = np.nan
bad = os.path.join(harness.WORK, "nan.ckpt")
dmlps.write_initial(bad, pinned["layout"], values)
run = subprocess.run([os.path.join(harness.BIN, "dmlps-server"), "--bind", "tcp://127.0.0.1:*",
                      "--model", "external", "--initial", bad], capture_output=True, text=True,
                     timeout=30)
if run.returncode != 65 or "NaN" not in run.stderr or run.stderr.count("error:") != 1:
    harness.fail(f"a NaN file: exit {run.returncode}, {run.stderr!r}")
print(f"the run started from the file's {want.size} floats; other layouts and NaN refused")
