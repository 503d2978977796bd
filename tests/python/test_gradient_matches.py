"""The PyTorch port of dmlps' built-in models computes the gradient the
built-in ones do: an nn.Sequential from dmlps.torch.mlp, its parameters laid
out by TorchComputation, gives mlp:128's (and softmax's) loss and gradient
on the same parameters and samples, to float tolerance."""

import harness
import numpy as np
import torch

import dmlps
import dmlps.torch

x, y = harness.fashion_mnist()
rng = np.random.default_rng(7)
ids = np.sort(rng.choice(len(x), size=256, replace=False)).astype(np.int64)

for name, hidden in (("mlp:128", [128]), ("softmax", []), ("mlp:64,32", [64, 32])):
    module = dmlps.torch.mlp(784, hidden, 10)
    computation = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), x, y)
    # The server's own initial values, perturbed so biases are not all zero.
    params = dmlps.model_initialize(name, 784, 10, seed=3)
    params = (params + rng.normal(0, 0.01, params.shape)).astype(np.float32)
    if computation.num_params != len(params):
        harness.fail(f"{name}: the module has {computation.num_params} parameters, "
                     f"the built-in model {len(params)}")
    grad = np.full_like(params, np.nan)
    loss = computation(params, ids, grad)
    want_loss, want_grad = dmlps.model_loss_and_gradient(name, params, x.numpy()[ids],
                                                         y.numpy()[ids], 10)
    scale = np.abs(want_grad).max()
    error = np.abs(grad - want_grad).max()
    print(f"{name}: loss {loss:.6f} vs {want_loss:.6f}, max gradient difference "
          f"{error:.3g} (largest entry {scale:.3g})")
    if not np.isfinite(grad).all():
        harness.fail(f"{name}: the gradient was not filled in")
    if abs(loss - want_loss) > 1e-5 * max(1.0, abs(want_loss)):
        harness.fail(f"{name}: losses differ")
    if error > 1e-5 * scale + 1e-7:
        harness.fail(f"{name}: gradients differ")
    # The round trip module <-> flat vector is exact, and the layout names
    # every parameter in order.
    computation.load(params)
    if not np.array_equal(computation.initial_values(), params):
        harness.fail(f"{name}: load/flatten does not round-trip")
    layout = computation.layout()
    if sum(int(np.prod(shape)) for _, shape in layout) != len(params):
        harness.fail(f"{name}: the layout does not cover the vector")
    if [n for n, _ in layout] != [n for n, _ in module.named_parameters()]:
        harness.fail(f"{name}: the layout is not named_parameters() order")

# A torch Dataset gives the same gradient as the tensors it holds.
module = dmlps.torch.mlp(784, [128], 10)
params = dmlps.model_initialize("mlp:128", 784, 10, seed=5)


class Pairs(torch.utils.data.Dataset):
    def __len__(self):
        return len(x)

    def __getitem__(self, i):
        return x[i], y[i]


grads = []
for data in ((x, y), (torch.utils.data.TensorDataset(x, y),), (Pairs(),)):
    c = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), *data)
    g = np.zeros_like(params)
    c(params, ids, g)
    grads.append(g)
# Each computation links the module's parameters to its own flat vectors;
# the earlier ones, unlinked, still compute the same gradient (slowly).
stale = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), x, y)
c = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), x, y)
del module[0].weight.grad  # as an optimizer's zero_grad(set_to_none=True) would
for computation in (stale, c):
    g = np.zeros_like(params)
    computation(params, ids, g)
    grads.append(g)
if stale._linked() or not c._linked():
    harness.fail("the module is not linked to the newest computation's vectors")
if not all(np.allclose(g, grads[0], rtol=0, atol=1e-7) for g in grads):
    harness.fail("a torch Dataset gives another gradient than its tensors")
# A shard's sample ids are rows of its slice: shard 1 of 3 starts at row
# 20000 of 60000, as dmlps-worker's does.
c = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), x, y)
if c.use_shard(1, 3) != 20000 or c.num_samples != 20000:
    harness.fail("shard 1 of 3 does not hold 20000 samples")
shard_ids = ids % 20000
g = np.zeros_like(params)
c(params, shard_ids, g)
_, want = dmlps.model_loss_and_gradient("mlp:128", params, x.numpy()[shard_ids + 20000],
                                        y.numpy()[shard_ids + 20000], 10)
if np.abs(g - want).max() > 1e-5 * np.abs(want).max():
    harness.fail("a shard's gradient is not over its own rows")
print("ok")
