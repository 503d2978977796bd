"""dmlps workers whose gradients Python computes.

``Worker(server, num_samples, compute, ...)`` joins a dmlps server and trains
as ``dmlps-worker`` does (every policy; dmlps-worker(1)'s options as
keywords with its defaults: ``rank``, ``slowdown``, ``delay_ms``, ...;
``help(dmlps.Worker)`` lists them), except that each gradient comes from
``compute(params, sample_ids, grad)``: ``params`` (float32, read-only) is a
copy of the worker's model, ``sample_ids`` (int64) are indices into the
``num_samples`` samples the caller holds, and ``grad`` (float32, writable)
is copied into the worker's push when the call returns. It fills ``grad``
with the mean gradient over those samples and returns their mean loss. The
three are NumPy arrays of their own: one kept past its call stays valid
(after ``run()`` too) and holds what it held when its call returned; the
worker never writes into it again, and writes into it change nothing the
worker sends. Workers log to standard error (``set_log_level``). See
docs/your-model.md; ``dmlps.torch`` does all of this for a PyTorch module.

``Evaluator(server, evaluate)`` joins a server started with ``--evaluator``
and scores the snapshots it would have scored itself: ``evaluate(params)``
gets each snapshot as a read-only float32 array (a copy of its own) and
returns ``(accuracy, loss)``; the server stamps them with the snapshot's
time, so its TSV, ``--target-accuracy`` and traces behave as for a built-in
model. A PyTorch module should score in ``eval()`` mode (Dropout off,
BatchNorm on its running statistics); ``dmlps.torch.evaluator`` does so.

What fails raises a subclass of ``dmlps.Error`` that says which kind of
failure it is, with a built-in exception as its second base where one
fits: ``InvalidArgumentError`` (ValueError), ``ConfigError`` (ValueError),
``DataLossError`` (ValueError), ``NotFoundError`` (FileNotFoundError),
``InputOutputError`` (OSError), ``InternalError`` (RuntimeError), and
``ServerError`` (ConnectionError) with its subclasses ``UnavailableError``
(TimeoutError: no server answered), ``ServerLostError``, ``RefusedError``
and ``ProtocolError``.
"""

import os
from typing import Any, Iterable, Union

from dmlps._dmlps import (  # noqa: F401
    ConfigError,
    DataLossError,
    Error,
    Evaluator,
    InputOutputError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    ProtocolError,
    RefusedError,
    ServerError,
    ServerLostError,
    UnavailableError,
    Worker,
    __version__,
    load_test,
    load_train,
    model_initialize,
    model_loss_and_gradient,
    read_checkpoint,
    set_log_level,
    write_initial,
)

__all__ = ["ConfigError", "DataLossError", "Error", "Evaluator", "InputOutputError",
           "InternalError", "InvalidArgumentError", "NotFoundError", "ProtocolError",
           "RefusedError", "ServerError", "ServerLostError", "UnavailableError", "Worker",
           "__version__", "load_test", "load_train", "model_initialize",
           "model_loss_and_gradient", "read_checkpoint", "read_model", "set_log_level",
           "write_initial"]

_Path = Union[str, "os.PathLike[str]"]


def read_model(paths: Union[_Path, Iterable[_Path]]) -> "tuple[Any, dict[str, Any]]":
    """The whole flat vector (parameters, then module state) and the layout
    of a checkpoint: ``paths`` is one checkpoint file, or the files of every
    server shard of one run (any order). Returns ``(values, info)``, info
    being ``read_checkpoint``'s dict of the first shard without 'params'.
    ValueError when the files are not every slice of one model version;
    ``read_checkpoint``'s errors for a file that is missing or damaged."""
    import numpy as np

    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    parts = sorted((read_checkpoint(str(p)) for p in paths), key=lambda c: c["slice_begin"])
    if not parts:
        raise InvalidArgumentError("no checkpoint file given")
    first = parts[0]
    count = first["shard_count"]
    if len(parts) != count or sorted(c["shard_index"] for c in parts) != list(range(count)):
        raise InvalidArgumentError(f"the model was checkpointed by {count} server shards: give "
                                   f"the file of each ({len(parts)} given)")
    offset = 0
    for c in parts:
        if c["slice_begin"] != offset or c["version"] != first["version"] or \
                c["model_params"] != first["model_params"]:
            raise InvalidArgumentError("the files are slices of different models or model "
                                       "versions")
        offset += len(c["params"])
    if offset != first["model_params"]:
        raise InvalidArgumentError(f"the slices hold {offset} floats of a model of "
                                   f"{first['model_params']}")
    info = {k: v for k, v in first.items() if k != "params"}
    return np.concatenate([c["params"] for c in parts]), info
