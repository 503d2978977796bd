"""A module's buffers are the model's state (docs/module-state.md): a
BatchNorm network's running statistics travel with each push, the server
sets them to the mean of the values the round's pushes carried, and the
evaluator scores in eval() mode with the server's statistics, so that the
accuracy the server reports is the accuracy of the final parameters and
buffers loaded into a fresh module."""

import os

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch


def network(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, 32), torch.nn.BatchNorm1d(32),
                               torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 10))


x, y = harness.fashion_mnist()
x_test, y_test = (torch.from_numpy(a) for a in dmlps.load_test("fashion-mnist"))
x_test, y_test = x_test[:2000], y_test[:2000]
loss_fn = torch.nn.CrossEntropyLoss()

# The layout names the buffers as state, after the parameters.
probe = dmlps.torch.TorchComputation(network(0), loss_fn, x, y)
layout = probe.layout()
names = [entry[0] for entry in layout]
if names[-3:] != ["1.running_mean", "1.running_var", "1.num_batches_tracked"]:
    harness.fail(f"the layout does not end with BatchNorm's buffers: {names}")
if [len(entry) for entry in layout][-3:] != [3, 3, 3] or any(len(e) == 3 for e in layout[:-3]):
    harness.fail(f"the buffers, and only they, are marked as state: {layout}")
if probe.num_state != 65 or probe.num_params != probe.num_weights + 65:
    harness.fail(f"{probe.num_state} floats of state, expected 32 + 32 + 1")

# One round of two workers: the server's state is the mean of what they pushed.
pushed = {}


def recording(rank, computation):
    def compute(params, sample_ids, grad):
        loss = computation(params, sample_ids, grad)
        pushed.setdefault(rank, np.array(grad[computation.num_weights:]))
        return loss
    return compute


save = os.path.join(harness.WORK, "one-round.model")
server = harness.Server("--model", "external", "--workers", "2", "--policy", "bsp", "--batch",
                        "64", "--max-iterations", "1", "--save-model", save, name="one-round")
workers = []
for rank in range(2):
    computation = dmlps.torch.TorchComputation(network(0), loss_fn, x, y)
    workers.append(dmlps.Worker(
        server.endpoint, computation.num_samples, recording(rank, computation),
        num_params=computation.num_params, layout=computation.layout(),
        initial_values=computation.initial_values(),
        on_join=lambda job, c=computation: c.use_shard(job["shard_index"], job["shard_count"])))
harness.run_workers(workers, 120)
if server.wait(30) != 0:
    harness.fail("dmlps-server failed")
saved = np.fromfile(save, dtype="<f4")
state = saved[probe.num_weights:]
want = (pushed[0] + pushed[1]) / 2
if not np.allclose(state, want, rtol=1e-6, atol=1e-7):
    harness.fail(f"the server's state is not the mean of the pushes': {state[:4]} vs {want[:4]}")
if state[-1] != 1 or np.allclose(state[32:64], 1):
    harness.fail(f"after one step num_batches_tracked is {state[-1]} and the variance unmoved")
print(f"one round: the server's running mean starts {state[:3]}, the pushes' mean {want[:3]}")

# A run with an evaluator: its last score is that of the saved model, scored
# by a fresh module in eval() mode.
save = os.path.join(harness.WORK, "trained.model")
server = harness.Server("--model", "external", "--evaluator", "--workers", "2", "--policy",
                        "bsp", "--max-iterations", "60", "--eval-every", "20", "--save-model",
                        save, name="trained")
workers = [dmlps.torch.worker(server.endpoint, network(0), loss_fn, x, y) for _ in range(2)]
evaluator = dmlps.torch.evaluator(server.endpoint, network(5), loss_fn, x_test, y_test)
threads = harness.train(server, workers + [evaluator], 180, "a worker or the evaluator")
reported = server.last_accuracy()
fresh = network(9)
computation = dmlps.torch.TorchComputation(fresh, loss_fn, x_test, y_test)
computation.load(np.fromfile(save, dtype="<f4"))
fresh.eval()
with torch.no_grad():
    accuracy = float((fresh(x_test).argmax(dim=1) == y_test).float().mean())
print(f"reported {reported:.4f}, the saved model in a fresh module {accuracy:.4f}")
if abs(accuracy - reported) > 0.0005:
    harness.fail(f"the evaluator reported {reported}, the saved model scores {accuracy}")
if fresh[1].num_batches_tracked.item() != 60:
    harness.fail(f"num_batches_tracked is {fresh[1].num_batches_tracked.item()}, not 60")
if torch.allclose(fresh[1].running_var, torch.ones(32)):
    harness.fail("the saved running variance is BatchNorm's initial one")
print("ok: buffers travel as state, averaged by the server and scored in eval() mode")
