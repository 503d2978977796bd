"""Train a PyTorch module with dmlps workers.

``TorchComputation(module, loss_fn, x, y)`` (or ``(module, loss_fn,
dataset)`` with a torch Dataset of (input, target) pairs) is a ``compute``
callback for ``dmlps.Worker``: it copies the server's flat parameter vector into the
module's parameters, runs the module on the samples asked for, and writes the
gradient autograd computes back in the same layout.

The flat layout is the module's parameters in ``module.parameters()`` order,
then (with ``buffers=True``, the default) its buffers in ``named_buffers()``
order: BatchNorm's running mean and variance and its ``num_batches_tracked``,
any registered buffer. The buffers are the model's state, marked as such in
the layout: the server never steps them, but sets them at each update to the
sample-weighted mean of the values the workers pushed, and every pull,
evaluation, checkpoint and shard carries them (docs/module-state.md). Each
step loads the server's buffers into the module before it runs, and pushes
the module's buffers as the step left them. Integer buffers travel as
float32 and are rounded when loaded.
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

# The parameters a worker passes are a read-only array; this module only reads
# them, so PyTorch's warning about tensors over read-only arrays is noise.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


class TorchComputation:
    """The ``compute`` callback of a ``dmlps.Worker`` for a PyTorch module.

    Each step runs the module in ``train()`` mode, whatever mode it was left
    in: Dropout is active and BatchNorm normalises with the batch's own
    statistics and updates its running statistics, which (``buffers=True``)
    travel through the server as the model's state. ``evaluator`` scores in
    ``eval()`` mode instead, with the server's buffers.

    The module's parameters must be float32 and all on one device, the
    device it computes on (move the module there first: ``module.to(device)``);
    ValueError otherwise. Its parameters and their gradients become views of
    two flat vectors on that device, and each step copies the server's
    parameters in with one host-to-device copy (from a pinned host buffer on
    CUDA) and the gradient out with one device-to-host copy; each batch's
    inputs and targets are moved to the device (x and y may be there
    already). On the CPU no extra copy is made."""

    def __init__(self, module, loss_fn, x, y=None, layout="dmlps", buffers=True,
                 local_optimizer=None):
        if layout not in ("dmlps", "torch"):
            raise ValueError("layout must be 'dmlps' or 'torch'")
        if local_optimizer is not None and not isinstance(local_optimizer, torch.optim.Optimizer):
            raise ValueError("local_optimizer must be a torch.optim.Optimizer over the "
                             "module's parameters")
        self.local_optimizer = local_optimizer
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
        self.num_weights = sum(p.numel() for p in self.params)
        self.buffers = _state_buffers(module) if buffers else []
        self.num_state = sum(b.numel() for _, b in self.buffers)
        # The flat vector's length: the parameters, then the buffers.
        self.num_params = self.num_weights + self.num_state
        # The module's parameters and their gradients become views of two flat
        # vectors in the layout, on the module's device, so a step copies each
        # vector once (a memcpy, or one transfer each way) instead of
        # parameter by parameter, transposing.
        self._flat = self.flatten()[:self.num_weights].to(self.device)
        self._flat_grad = torch.zeros(self.num_weights, dtype=torch.float32, device=self.device)
        # Off the CPU the vectors pass through host buffers, pinned for CUDA
        # so that the transfers are DMA; `_loaded` marks when the last
        # transfer from the parameters' buffer is done and it may be refilled.
        self._host_params = self._host_grad = self._loaded = None
        if self._stages():
            pin = self.device.type == "cuda"
            self._host_params = torch.empty(self.num_weights, dtype=torch.float32, pin_memory=pin)
            self._host_grad = torch.empty(self.num_weights, dtype=torch.float32, pin_memory=pin)
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
        ``layout="dmlps"`` a 2-D one is stored column-major, i.e. transposed);
        then (name, shape, True) per buffer, the model's state (a scalar
        buffer as shape (1,))."""
        return TorchComputation.layout_of(self.module, bool(self.buffers))

    @staticmethod
    def layout_of(module, buffers=True):
        """The layout a TorchComputation of ``module`` announces (see layout())."""
        weights = [(name, tuple(p.shape)) for name, p in module.named_parameters()]
        state = _state_buffers(module) if buffers else []
        return weights + [(name, tuple(b.shape) or (1,), True) for name, b in state]

    def initial_values(self):
        """The module's current parameters and buffers as a flat float32
        NumPy array."""
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
        return _views(self.params, self.transposed, flat)

    def load(self, params):
        """Copies a flat vector (NumPy or tensor) into the module: its
        parameters, then its buffers."""
        flat = torch.as_tensor(params)
        if flat.numel() != self.num_params:
            raise ValueError(
                f"the flat vector has {flat.numel()} floats, the module {self.num_params}"
                + (f" ({self.num_weights} parameters and {self.num_state} of buffers)"
                   if self.num_state else ""))
        with torch.no_grad():
            self._load_state(flat[self.num_weights:])
            flat = flat[:self.num_weights]
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
        """The module's parameters and buffers as one flat float32 tensor in
        the layout, on the CPU."""
        flat = torch.empty(self.num_params, dtype=torch.float32)
        with torch.no_grad():
            for p, target, _ in self._slices(flat):
                target.copy_(p)
            self._store_state(flat[self.num_weights:])
        return flat

    def _load_state(self, flat):
        _load_buffers(self.buffers, flat)

    def _store_state(self, out):
        _store_buffers(self.buffers, out)

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

    def local_step(self, params, grad):
        """The local step of the local modes (wbsp, localsgd, async-localsgd)
        with ``local_optimizer``, right after the step that computed the
        module's gradient at ``params``: steps the module, then writes its
        parameters and buffers into ``params`` (the worker's local copy,
        writable). The optimizer's state stays with this computation from
        round to round, as DiLoCo's inner AdamW's does."""
        if self.local_optimizer is None:
            raise RuntimeError("this TorchComputation has no local_optimizer")
        self.local_optimizer.step()
        out = torch.as_tensor(params)
        with torch.no_grad():
            self._store_state(out[self.num_weights:])
            if self._linked():
                out[:self.num_weights].copy_(self._flat)
            else:
                for p, target, _ in self._slices(out):
                    target.copy_(p)

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
        """Copies the module's gradient into a flat vector (NumPy or tensor),
        and its buffers, as the step left them, after it."""
        out = torch.as_tensor(grad)
        with torch.no_grad():
            self._store_state(out[self.num_weights:])
            out = out[:self.num_weights]
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


def _views(params, transposed, flat):
    """(parameter, its slice of flat in the layout's shape, transposed?) for
    each parameter in turn, from the start of ``flat``."""
    offset = 0
    for p, t in zip(params, transposed):
        n = p.numel()
        part = flat[offset:offset + n]
        offset += n
        if t:  # column-major out x in is row-major in x out
            yield p, part.view(p.shape[1], p.shape[0]).t(), True
        else:
            yield p, part.view(p.shape), False


def _load_buffers(buffers, flat):
    """Copies the state part of a flat vector into ``buffers`` ((name,
    buffer) pairs), integer ones rounded."""
    offset = 0
    for _, b in buffers:
        part = flat[offset:offset + b.numel()].view(b.shape)
        offset += b.numel()
        if not b.is_floating_point():
            part = part.round()
        b.copy_(part)


def _store_buffers(buffers, out):
    """Writes ``buffers``, as float32, into ``out``, the state part of a flat
    vector."""
    offset = 0
    for _, b in buffers:
        out[offset:offset + b.numel()].copy_(b.reshape(-1))
        offset += b.numel()


def load_model(module, values, layout="dmlps", buffers=True):
    """Copies a flat vector of the server's model (parameters, then module
    state: what ``--save-model`` writes, or ``dmlps.read_model`` reads from
    checkpoints) into ``module``'s parameters and buffers, laid out as
    TorchComputation lays them out; returns ``module``. ValueError when the
    lengths differ. ``module.state_dict()`` is then plain PyTorch's."""
    flat = torch.as_tensor(values)
    params = list(module.parameters())
    state = _state_buffers(module) if buffers else []
    weights = sum(p.numel() for p in params)
    want = weights + sum(b.numel() for _, b in state)
    if flat.dim() != 1 or flat.numel() != want:
        raise ValueError(f"the model has {flat.numel()} floats, the module {want} "
                         f"({weights} parameters and {want - weights} of buffers)")
    with torch.no_grad():
        for p, source, _ in _views(params, [layout == "dmlps" and p.dim() == 2 for p in params],
                                   flat):
            p.copy_(source)
        _load_buffers(state, flat[weights:])
    return module


def save_initial(module, path, layout="dmlps", buffers=True):
    """Writes ``module``'s layout and current parameters and buffers, laid
    out as TorchComputation lays them out, to ``path``: a file that
    ``dmlps-server --model external --initial path`` starts from, so that
    no peer chooses the model (docs/security.md). Returns ``path``."""
    params = list(module.parameters())
    state = _state_buffers(module) if buffers else []
    weights = sum(p.numel() for p in params)
    flat = torch.empty(weights + sum(b.numel() for _, b in state), dtype=torch.float32)
    with torch.no_grad():
        for p, target, _ in _views(params, [layout == "dmlps" and p.dim() == 2 for p in params],
                                   flat):
            target.copy_(p.detach().cpu())
        _store_buffers([(n, b.detach().cpu()) for n, b in state], flat[weights:])
    dmlps.write_initial(path, TorchComputation.layout_of(module, bool(buffers)), flat.numpy())
    return path


def load_checkpoint(module, paths, layout="dmlps", buffers=True):
    """Loads the model of a dmlps-server checkpoint (one file, or every
    server shard's file of one run) into ``module`` and returns its
    ``state_dict()``, ready for ``torch.save`` and plain PyTorch.
    ValueError when the checkpoint's layout (an external model's) names
    other tensors than the module's, or its size differs."""
    values, info = dmlps.read_model(paths)
    if info["layout"]:
        mine = TorchComputation.layout_of(module, buffers)
        theirs = [(name, tuple(shape), state) for name, shape, state in info["layout"]]
        mine = [(e[0], tuple(e[1]), len(e) == 3) for e in mine]
        if mine != theirs:
            first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                         min(len(mine), len(theirs)))
            raise ValueError(f"the checkpoint's tensor {first} is "
                             f"{theirs[first] if first < len(theirs) else 'missing'}, the "
                             f"module's {mine[first] if first < len(mine) else 'missing'}")
    load_model(module, values, layout, buffers)
    return module.state_dict()


def _state_buffers(module):
    """(name, buffer) for each of ``module``'s buffers, in ``named_buffers()``
    order; ValueError for one that is not a number or not on the
    parameters' device."""
    device = _device_of(module)
    buffers = []
    for name, b in module.named_buffers():
        if b.is_complex() or b.dtype == torch.bool:
            raise ValueError(f"buffer '{name}' is {b.dtype}; dmlps carries real and integer "
                             "buffers only (buffers=False leaves them out)")
        if b.device != device:
            raise ValueError(f"buffer '{name}' is on {b.device}, the parameters on {device}")
        buffers.append((name, b))
    return buffers


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


def worker(server, module, loss_fn, x, y=None, layout="dmlps", shard=True, buffers=True,
           local_optimizer=None, **options):
    """A dmlps.Worker that trains ``module`` on (x, y), or on a torch Dataset
    x of (input, target) pairs; options as Worker's. With ``shard`` (the
    default) it trains on the share of the samples the server assigns it, as
    dmlps-worker does; without, on all of them. The worker offers the server
    the module's layout and current values (see Worker), its buffers as the
    model's state unless ``buffers=False`` (see TorchComputation). With
    ``local_optimizer`` (a torch.optim optimizer over ``module.parameters()``,
    as ``torch.optim.AdamW(module.parameters(), lr=1e-3)``) the local steps
    of wbsp, localsgd and async-localsgd are that optimizer's steps instead
    of the server's --lr and --momentum SGD (DiLoCo's inner AdamW)."""
    computation = TorchComputation(module, loss_fn, x, y, layout, buffers, local_optimizer)
    if local_optimizer is not None:
        options.setdefault("local_step", computation.local_step)
    options.setdefault("layout", computation.layout())
    options.setdefault("initial_values", computation.initial_values())
    if shard and "on_join" not in options:
        options["on_join"] = lambda job: computation.use_shard(job["shard_index"],
                                                               job["shard_count"])
    return dmlps.Worker(server, computation.num_samples, computation,
                        num_params=computation.num_params, **options)


def evaluator(server, module, loss_fn, x, y=None, layout="dmlps", batch=1000, buffers=True,
              **options):
    """A dmlps.Evaluator that scores each snapshot of the server's model with
    ``module`` on the test samples (x, y) (or a torch Dataset x): the share
    of predictions whose largest output (over the last dimension: per
    sample, or per position of a sequence) is the target, and the mean of
    ``loss_fn`` over the samples; options as Evaluator's. The flat vector is read in the
    layout the workers use (see TorchComputation). Each snapshot is scored
    ``batch`` samples at a time with the module in ``eval()`` mode (Dropout
    off, BatchNorm on its running statistics), and every submodule's mode
    is restored afterwards. With ``buffers`` (the default, as the workers')
    the snapshot's module state is loaded too: BatchNorm normalises with the
    running statistics the server averaged from the workers. The module may
    be on any
    device (see TorchComputation): each snapshot is copied there once and
    each batch's samples are moved there."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    computation = TorchComputation(module, loss_fn, x, y, layout, buffers)
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
        predicted = 0
        loss = 0.0
        try:
            with torch.no_grad():
                for first in range(0, rows, batch):
                    ids = torch.arange(first, min(rows, first + batch))
                    inputs, targets = computation._batch(ids)
                    outputs = module(inputs)
                    loss += float(loss_fn(outputs, targets)) * len(ids)
                    # The last dimension holds the classes: one prediction per
                    # sample, or per position of a sequence (a language model's).
                    correct += int((outputs.argmax(dim=-1) == targets).sum())
                    predicted += targets.numel()
        finally:
            for m, training in modes:
                m.training = training
        return correct / max(predicted, 1), loss / rows

    return evaluate
