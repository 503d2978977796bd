"""dmlps workers whose gradients Python computes.

``Worker(server, num_samples, compute, ...)`` joins a dmlps server and trains
as ``dmlps-worker`` does (every policy; the straggler options of
dmlps-worker(1) as keywords: ``slowdown``, ``delay_ms``, ...), except that each
gradient comes from ``compute(params, sample_ids, grad)``: ``params`` (float32,
read-only) and ``grad`` (float32, writable) are NumPy views of the worker's own
buffers, valid only during the call; ``sample_ids`` (int64) are indices into
the ``num_samples`` samples the caller holds. It fills ``grad`` with the mean
gradient over those samples and returns their mean loss. Workers log to
standard error (``set_log_level``). See docs/your-model.md; ``dmlps.torch``
does all of this for a PyTorch module.
"""

from dmlps._dmlps import (  # noqa: F401
    Worker,
    __version__,
    load_train,
    model_initialize,
    model_loss_and_gradient,
    set_log_level,
)

__all__ = ["Worker", "__version__", "load_train", "model_initialize", "model_loss_and_gradient",
           "set_log_level"]
