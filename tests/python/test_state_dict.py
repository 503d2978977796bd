"""The trained model comes out as a plain state_dict, and a pretrained one
goes in: dmlps.torch.load_checkpoint turns a server's checkpoint (one file,
or every shard's) into the module's state_dict, parameters and BatchNorm
buffers, which scores in plain PyTorch what the server's evaluator reported;
a module that loaded it starts a new run from exactly that model."""

import os
import subprocess

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch


def network(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, 24), torch.nn.BatchNorm1d(24),
                               torch.nn.ReLU(), torch.nn.Linear(24, 10))


def plain_accuracy(module):
    module.eval()
    with torch.no_grad():
        return float((module(x_test).argmax(dim=1) == y_test).float().mean())


x, y = harness.fashion_mnist()
x_test, y_test = (torch.from_numpy(a) for a in dmlps.load_test("fashion-mnist"))
x_test, y_test = x_test[:2000], y_test[:2000]
loss_fn = torch.nn.CrossEntropyLoss()


def train(tag, *args, make=network, shards=1):
    """A run of two workers and an evaluator; its server and the shard files."""
    checkpoints = [os.path.join(harness.WORK, f"{tag}.ckpt.{k}") for k in range(shards)]
    shard = ["--shard", f"0/{shards}"] if shards > 1 else []
    server = harness.Server("--model", "external", "--evaluator", "--workers", "2", "--policy",
                            "bsp", "--eval-every", "20", "--checkpoint", checkpoints[0],
                            "--checkpoint-every", "20", *shard, *args, name=tag)
    others = []
    for k in range(1, shards):
        log = open(os.path.join(harness.WORK, f"{tag}-shard-{k}.log"), "w")
        others.append(subprocess.Popen(
            [os.path.join(harness.BIN, "dmlps-server"), "--bind", "tcp://127.0.0.1:*", "--shard",
             f"{k}/{shards}", "--coordinator", server.endpoint, "--checkpoint", checkpoints[k]],
            stdout=subprocess.DEVNULL, stderr=log))
        harness._children.append(others[-1])
    # The first worker to join announces the initial model: both hold the same.
    workers = [dmlps.torch.worker(server.endpoint, make(0), loss_fn, x, y) for _ in range(2)]
    evaluator = dmlps.torch.evaluator(server.endpoint, network(2), loss_fn, x_test, y_test)
    threads = harness.run_workers(workers + [evaluator], 180)
    if server.wait(30) != 0:
        harness.fail(f"{tag}: dmlps-server failed")
    for other in others:
        if other.wait(timeout=30) != 0:
            harness.fail(f"{tag}: a server shard failed")
    for t in threads:
        if t.error is not None:
            harness.fail(f"{tag}: a worker or the evaluator raised {t.error!r}")
    return server, checkpoints


def tsv(server):
    with open(server.tsv) as f:
        return [line.split("\t") for line in f.read().splitlines()[1:]]


# Out: the last checkpoint (iteration 60) as a state_dict, saved with
# torch.save and loaded into a fresh module by plain PyTorch.
server, checkpoints = train("out", "--max-iterations", "60")
state_dict = dmlps.torch.load_checkpoint(network(5), checkpoints[0])
if set(state_dict) != set(network(6).state_dict()):
    harness.fail(f"the state_dict's keys differ from the module's: {sorted(state_dict)}")
saved = os.path.join(harness.WORK, "model.pt")
torch.save(state_dict, saved)
plain = network(7)
plain.load_state_dict(torch.load(saved))
reported = float(tsv(server)[-1][2])
accuracy = plain_accuracy(plain)
print(f"out: the evaluator reported {reported:.4f} at iteration 60, plain PyTorch {accuracy:.4f}")
if abs(accuracy - reported) > 0.0005:
    harness.fail(f"the exported model scores {accuracy}, the server reported {reported}")
if plain[1].num_batches_tracked.item() != 60:
    harness.fail(f"num_batches_tracked {plain[1].num_batches_tracked.item()}, not 60")

# In: a run whose workers hold the exported model starts from it.


def pretrained(seed):
    module = network(seed)
    module.load_state_dict(torch.load(saved))
    return module


server, _ = train("in", "--max-iterations", "20", make=pretrained)
start = tsv(server)[0]
print(f"in: the fine-tuning run's first evaluation {start}")
if int(start[1]) != 0 or abs(float(start[2]) - accuracy) > 0.0005:
    harness.fail(f"the fine-tuning run did not start from the pretrained model: {start}")

# Two server shards: every shard's file makes the model; one alone is refused.
server, checkpoints = train("sharded", "--max-iterations", "40", shards=2)
state_dict = dmlps.torch.load_checkpoint(network(5), list(reversed(checkpoints)))
plain = network(9)
plain.load_state_dict(state_dict)
reported = float(tsv(server)[-1][2])
if abs(plain_accuracy(plain) - reported) > 0.0005:
    harness.fail(f"the sharded export scores {plain_accuracy(plain)}, the server {reported}")
for wrong, why in ((checkpoints[:1], "give the file of each"),
                   ([checkpoints[0], checkpoints[0]], "give the file of each")):
    try:
        dmlps.read_model(wrong)
        harness.fail(f"read_model({wrong}) was not refused")
    except ValueError as e:
        if why not in str(e):
            harness.fail(f"the refusal does not say '{why}': {e}")
# A module of another shape, and a damaged file, are refused with a reason.
try:
    dmlps.torch.load_checkpoint(torch.nn.Sequential(torch.nn.Linear(784, 10)), checkpoints)
    harness.fail("a module of another layout took the checkpoint")
except ValueError as e:
    print(f"refused: {e}")
damaged = os.path.join(harness.WORK, "damaged.ckpt")
data = bytearray(open(checkpoints[0], "rb").read())
data[len(data) // 2] ^= 0xFF
open(damaged, "wb").write(bytes(data))
try:
    dmlps.read_checkpoint(damaged)
    harness.fail("a damaged checkpoint was read")
except ValueError as e:
    if "checksum" not in str(e) or "damaged.ckpt" not in str(e):
        harness.fail(f"the refusal does not say why: {e}")
values, info = dmlps.read_model(checkpoints)
if len(values) != info["model_params"] or info["iteration"] != 40:
    harness.fail(f"read_model: {len(values)} floats, {info}")
print("ok: checkpoints export to plain state_dicts, sharded too, and start a fine-tuning run")
