"""Train a PyTorch module with dmlps workers.

``TorchComputation(module, loss_fn, x, y)`` (or ``(module, loss_fn,
dataset)`` with a torch Dataset of (input, target) pairs) is a ``compute``
callback for ``dmlps.Worker``: it copies the server's flat parameter vector into the
module's parameters, runs the module on the samples asked for, and writes the
gradient autograd computes back in the same layout.

The flat layout is the module's parameters in ``module.parameters()`` order.
With ``layout="dmlps"`` (the default) each 2-D parameter (a Linear weight,
out x in, row-major in PyTorch) is stored transposed, that is column-major
out x in, as dmlps' built-in models store theirs; 1-D ones (biases) as they
are. So an ``nn.Sequential`` of ``Linear`` layers with ``ReLU`` between them
has exactly the layout of the server's ``--model mlp:H1,...`` (and a single
Linear that of ``softmax``), with ``nn.CrossEntropyLoss()`` as the loss.
With ``layout="torch"`` every parameter is taken as PyTorch stores it (for a
server that takes the layout from its workers). The server's model must have
that layout: dmlps checks only the length.

The module may live on any torch device (``module.to("cuda")`` before
handing it over): its parameters must all be float32 and on one device, and
the inputs and targets of each batch are moved there. Each worker step on a
GPU then copies the flat parameter vector to the device once and the flat
gradient back once, through pinned host buffers; on the CPU the module's
parameters are views of the worker's copy, as before.
"""

import warnings

import torch

import dmlps

# The parameters a worker passes are a read-only view; this module only reads
# them, so PyTorch's warning about tensors over read-only arrays is noise.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


class TorchComputation:
    """The ``compute`` callback of a ``dmlps.Worker`` for a PyTorch module.

    Each step runs the module in ``train()`` mode, whatever mode it was left
    in: Dropout is active and BatchNorm normalises with the batch's own
    statistics (its running statistics are buffers, not parameters: they
    stay in this process and do not travel through the server).
    ``evaluator`` scores in ``eval()`` mode instead.

    The module's parameters must be float32 and all on one device, the
    device it computes on (move the module there first: ``module.to(device)``);
    ValueError otherwise. Its parameters and their gradients become views of
    two flat vectors on that device, and each step copies the server's
    parameters in with one host-to-device copy (from a pinned host buffer on
    CUDA) and the gradient out with one device-to-host copy; each batch's
    inputs and targets are moved to the device (x and y may be there
    already). On the CPU no extra copy is made."""

    def __init__(self, module, loss_fn, x, y=None, layout="dmlps"):
        if layout not in ("dmlps", "torch"):
            raise ValueError("layout must be 'dmlps' or 'torch'")
        self.module = module
        self.loss_fn = loss_fn
        self.dataset = None
        if y is None:  # a torch Dataset of (input, target) pairs
            if isinstance(x, torch.utils.data.TensorDataset) and len(x.tensors) == 2:
                x, y = x.tensors
            else:
                self.dataset = x
                self.x = self.y = None
        if self.dataset is None:
            if len(x) != len(y):
                raise ValueError("x and y must hold the same number of samples")
            self.x = torch.as_tensor(x)
            self.y = torch.as_tensor(y)
        self._first = 0
        self._rows = len(self.dataset) if self.dataset is not None else len(self.x)
        if self._rows == 0:
            raise ValueError("there are no samples")
        self.device = _device_of(module)
        self.params = list(module.parameters())
        self.transposed = [layout == "dmlps" and p.dim() == 2 for p in self.params]
        self.num_params = sum(p.numel() for p in self.params)
        # The module's parameters and their gradients become views of two flat
        # vectors in the layout, on the module's device, so a step copies each
        # vector once (a memcpy, or one transfer each way) instead of
        # parameter by parameter, transposing.
        self._flat = self.flatten().to(self.device)
        self._flat_grad = torch.zeros(self.num_params, dtype=torch.float32, device=self.device)
        # Off the CPU the vectors pass through host buffers, pinned for CUDA
        # so that the transfers are DMA; `_loaded` marks when the last
        # transfer from the parameters' buffer is done and it may be refilled.
        self._host_params = self._host_grad = self._loaded = None
        if self._stages():
            pin = self.device.type == "cuda"
            self._host_params = torch.empty(self.num_params, dtype=torch.float32, pin_memory=pin)
            self._host_grad = torch.empty(self.num_params, dtype=torch.float32, pin_memory=pin)
            if pin:
                self._loaded = torch.cuda.Event()
        with torch.no_grad():
            for p, view, _ in self._slices(self._flat):
                p.data = view
            for p, view, _ in self._slices(self._flat_grad):
                p.grad = view
        self._grad_ptrs = [p.grad.data_ptr() for p in self.params]

    @property
    def num_samples(self):
        return self._rows

    def use_shard(self, index, count):
        """Trains on shard ``index`` of ``count`` only: the same contiguous
        slice of the samples dmlps-worker takes (sizes differ by at most one).
        Returns the shard's sample count."""
        total = len(self.dataset) if self.dataset is not None else len(self.x)
        if not 0 <= index < count or count > total:
            raise ValueError(f"no shard {index} of {count} in {total} samples")
        base, extra = divmod(total, count)
        self._first = index * base + min(index, extra)
        self._rows = base + (1 if index < extra else 0)
        return self._rows

    def layout(self):
        """The flat vector's pieces in order: (name, shape) per parameter, from
        ``named_parameters()``; shapes as PyTorch gives them (with
        ``layout="dmlps"`` a 2-D one is stored column-major, i.e. transposed)."""
        return [(name, tuple(p.shape)) for name, p in self.module.named_parameters()]

    def initial_values(self):
        """The module's current parameters as a flat float32 NumPy array."""
        return self.flatten().numpy()

    def _stages(self):
        """Whether the flat vectors pass through host buffers: whenever the
        module is not on the CPU."""
        return self.device.type != "cpu"

    def _batch(self, ids):
        """The inputs and targets of the samples ``ids``, on the device."""
        if self._first:
            ids = ids + self._first
        if self.dataset is None:
            inputs, targets = self.x[ids], self.y[ids]
        else:
            pairs = [self.dataset[i] for i in ids.tolist()]
            inputs, targets = torch.utils.data.default_collate(pairs)
        return _to_device(inputs, self.device), _to_device(targets, self.device)

    def _slices(self, flat):
        """(parameter, its slice of flat in the layout's shape, transposed?)."""
        offset = 0
        for p, transposed in zip(self.params, self.transposed):
            n = p.numel()
            part = flat[offset:offset + n]
            offset += n
            if transposed:  # column-major out x in is row-major in x out
                yield p, part.view(p.shape[1], p.shape[0]).t(), True
            else:
                yield p, part.view(p.shape), False

    def load(self, params):
        """Copies a flat parameter vector (NumPy or tensor) into the module."""
        flat = torch.as_tensor(params)
        if flat.numel() != self.num_params:
            raise ValueError(
                f"the flat vector has {flat.numel()} floats, the module {self.num_params}")
        with torch.no_grad():
            if self._linked():
                if self._host_params is None or flat.device.type != "cpu":
                    self._flat.copy_(flat)
                    return
                if self._loaded is not None:
                    self._loaded.synchronize()  # the last transfer has read the buffer
                self._host_params.copy_(flat)
                self._flat.copy_(self._host_params, non_blocking=True)
                if self._loaded is not None:
                    self._loaded.record(torch.cuda.current_stream(self.device))
                return
            for p, source, _ in self._slices(flat):
                p.copy_(source)

    def flatten(self):
        """The module's parameters as one flat float32 tensor in the layout,
        on the CPU."""
        flat = torch.empty(self.num_params, dtype=torch.float32)
        with torch.no_grad():
            for p, target, _ in self._slices(flat):
                target.copy_(p)
        return flat

    def _linked(self):
        """Whether the module's parameters are still the flat vector's views
        (not when the caller has replaced or moved them since: then each step
        copies parameter by parameter, and a module moved to another device
        than the one it was on when this was made fails there)."""
        offset = self._flat.data_ptr()
        for p in self.params:
            if p.data_ptr() != offset:
                return False
            offset += p.numel() * 4
        return True

    def __call__(self, params, sample_ids, grad):
        """One worker step: loads ``params`` into the module, runs it in
        train() mode on ``sample_ids`` and writes the mean gradient into
        ``grad``; returns the mean loss."""
        self.load(params)
        loss = self.forward_backward(sample_ids)
        self.store_gradient(grad)
        return loss

    def forward_backward(self, sample_ids):
        """The mean loss on the samples, its gradient left in the module; the
        module runs in train() mode (and is left in it)."""
        inputs, targets = self._batch(torch.from_numpy(sample_ids))
        self.module.train()  # an evaluator or the caller may have left it in eval()
        self._flat_grad.zero_()
        for p, ptr in zip(self.params, self._grad_ptrs):
            if p.grad is None or p.grad.data_ptr() != ptr:
                p.grad = None  # unlinked: autograd gives it a tensor of its own
        loss = self.loss_fn(self.module(inputs), targets)
        loss.backward()
        return float(loss)

    def store_gradient(self, grad):
        """Copies the module's gradient into a flat vector (NumPy or tensor)."""
        out = torch.as_tensor(grad)
        with torch.no_grad():
            if all(p.grad is not None and p.grad.data_ptr() == ptr
                   for p, ptr in zip(self.params, self._grad_ptrs)):
                # Autograd accumulated into the views.
                if self._host_grad is not None and out.device.type == "cpu":
                    self._host_grad.copy_(self._flat_grad)  # waits for the step
                    out.copy_(self._host_grad)
                else:
                    out.copy_(self._flat_grad)
                return
            for p, target, _ in self._slices(out):
                if p.grad is None:
                    target.zero_()
                else:
                    target.copy_(p.grad)


def _device_of(module):
    """The device all of ``module``'s parameters are on; ValueError when one
    is not float32, when they are on two devices, or when there are none."""
    first = None
    for name, p in module.named_parameters():
        if p.dtype != torch.float32:
            raise ValueError(f"parameter '{name}' is {p.dtype}; dmlps.torch takes float32 "
                             "parameters only (module.float() converts them)")
        if first is None:
            first = (name, p.device)
        elif p.device != first[1]:
            raise ValueError(f"the module's parameters are on two devices: '{first[0]}' on "
                             f"{first[1]}, '{name}' on {p.device} (module.to(device) moves "
                             "them to one)")
    if first is None:
        raise ValueError("the module has no parameters to train")
    return first[1]


def _to_device(value, device):
    """A batch's tensor (or list, tuple or dict of them) on ``device``; the
    same tensor when it is there already."""
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def mlp(input_dim, hidden, classes):
    """An nn.Sequential with the layout of dmlps' ``mlp:H1,...`` (``softmax``
    without hidden layers)."""
    layers = []
    width = input_dim
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, classes))
    return torch.nn.Sequential(*layers)


def worker(server, module, loss_fn, x, y=None, layout="dmlps", shard=True, **options):
    """A dmlps.Worker that trains ``module`` on (x, y), or on a torch Dataset
    x of (input, target) pairs; options as Worker's. With ``shard`` (the
    default) it trains on the share of the samples the server assigns it, as
    dmlps-worker does; without, on all of them. The worker offers the server
    the module's layout and current values (see Worker)."""
    computation = TorchComputation(module, loss_fn, x, y, layout)
    options.setdefault("layout", computation.layout())
    options.setdefault("initial_values", computation.initial_values())
    if shard and "on_join" not in options:
        options["on_join"] = lambda job: computation.use_shard(job["shard_index"],
                                                               job["shard_count"])
    return dmlps.Worker(server, computation.num_samples, computation,
                        num_params=computation.num_params, **options)


def evaluator(server, module, loss_fn, x, y=None, layout="dmlps", batch=1000, **options):
    """A dmlps.Evaluator that scores each snapshot of the server's model with
    ``module`` on the test samples (x, y) (or a torch Dataset x): the share
    of samples whose largest output is the target, and the mean of
    ``loss_fn``; options as Evaluator's. The flat vector is read in the
    layout the workers use (see TorchComputation). Each snapshot is scored
    ``batch`` samples at a time with the module in ``eval()`` mode (Dropout
    off, BatchNorm on its running statistics), and every submodule's mode
    is restored afterwards. The server holds parameters only: BatchNorm's
    running statistics are the ones ``module`` came with (a fresh module's
    mean 0 and variance 1), never the workers'. The module may be on any
    device (see TorchComputation): each snapshot is copied there once and
    each batch's samples are moved there."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    computation = TorchComputation(module, loss_fn, x, y, layout)
    return dmlps.Evaluator(server, _scorer(computation, batch), **options)


def _scorer(computation, batch):
    """evaluate(params) -> (accuracy, mean loss) over all of computation's
    samples, in eval() mode."""
    module = computation.module
    loss_fn = computation.loss_fn
    rows = computation.num_samples

    def evaluate(params):
        computation.load(params)
        modes = [(m, m.training) for m in module.modules()]
        module.eval()
        correct = 0
        loss = 0.0
        try:
            with torch.no_grad():
                for first in range(0, rows, batch):
                    ids = torch.arange(first, min(rows, first + batch))
                    inputs, targets = computation._batch(ids)
                    outputs = module(inputs)
                    loss += float(loss_fn(outputs, targets)) * len(ids)
                    correct += int((outputs.argmax(dim=1) == targets).sum())
        finally:
            for m, training in modes:
                m.training = training
        return correct / rows, loss / rows

    return evaluate
