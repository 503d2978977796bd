"""dmlps.torch takes a module on one device with float32 parameters, and
refuses others with a one-line message naming the parameter: a float64 or
float16 one (by TorchComputation, dmlps.torch.worker and .evaluator), or
parameters on two devices (the CPU and "meta"). On the CPU the module's
parameters and gradients stay views of the flat vectors, with no host
buffers. The path a module off the CPU takes (flat vectors through host
buffers, batches moved to the device) is run on the CPU by forcing it,
and gives the same loss and gradient, bit for bit, as the direct one."""

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch

nn = torch.nn
torch.manual_seed(0)
x = torch.randn(300, 6)
y = (x[:, 0] > x[:, 1]).long()
loss_fn = nn.CrossEntropyLoss()


def refusal(make, *args, **kwargs):
    """The message of the ValueError make(*args, **kwargs) raises."""
    try:
        make(*args, **kwargs)
    except ValueError as e:
        return str(e)
    harness.fail(f"{getattr(make, '__name__', make)} accepted what it should refuse")


def expect(message, *words):
    if "\n" in message or not all(w in message for w in words):
        harness.fail(f"the refusal {message!r} does not name all of {words}")
    print(f"refused: {message}")


# Parameters that are not float32, wherever they are given.
for dtype in (torch.float64, torch.float16):
    module = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    module[2].to(dtype)
    expect(refusal(dmlps.torch.TorchComputation, module, loss_fn, x, y), "'2.weight'", str(dtype))
expect(refusal(dmlps.torch.worker, "tcp://127.0.0.1:1", module, loss_fn, x, y), "'2.weight'")
expect(refusal(dmlps.torch.evaluator, "tcp://127.0.0.1:1", module, loss_fn, x, y), "'2.weight'")

# Parameters on two devices.
module = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2, device="meta"))
expect(refusal(dmlps.torch.TorchComputation, module, loss_fn, x, y),
       "two devices", "'0.weight' on cpu", "'2.weight' on meta")
expect(refusal(dmlps.torch.TorchComputation, nn.ReLU(), loss_fn, x, y), "no parameters")


class ThroughHostBuffers(dmlps.torch.TorchComputation):
    """The path of a module off the CPU, taken on the CPU."""

    def _stages(self):
        return True


def step(computation, params, ids):
    grad = np.full_like(params, np.nan)
    loss = computation(params, ids, grad)
    return loss, grad


rng = np.random.default_rng(3)
ids = np.sort(rng.choice(len(x), size=64, replace=False)).astype(np.int64)
module = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
direct = dmlps.torch.TorchComputation(module, loss_fn, x, y)
params = (direct.initial_values() + rng.normal(0, 0.1, direct.num_params)).astype(np.float32)
if direct.device != torch.device("cpu") or direct._host_params is not None:
    harness.fail("a module on the CPU got host buffers")
first = direct._flat.data_ptr()
if [p.data_ptr() for p in module.parameters()][0] != first or not direct._linked():
    harness.fail("on the CPU the parameters are not views of the flat vector")
want = step(direct, params, ids)

for data in ((x, y), (torch.utils.data.TensorDataset(x, y),)):
    staged = ThroughHostBuffers(module, loss_fn, *data)
    if staged._host_params is None or staged._host_params.data_ptr() == staged._flat.data_ptr():
        harness.fail("the forced path has no host buffers of its own")
    got = step(staged, params, ids)
    if not staged._linked():
        harness.fail("through host buffers the parameters are not views of the flat vector")
    if got[0] != want[0] or not np.array_equal(got[1], want[1]):
        harness.fail(f"through host buffers: loss {got[0]} (want {want[0]}), largest "
                     f"gradient difference {np.abs(got[1] - want[1]).max()}")
    staged.load(params * 2)
    if not np.array_equal(staged.initial_values(), params * 2):
        harness.fail("through host buffers load() does not reach the module")
print(f"ok: loss {want[0]:.6f} both ways")
