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

``Evaluator(server, evaluate)`` joins a server started with ``--evaluator``
and scores the snapshots it would have scored itself: ``evaluate(params)``
gets each snapshot as a read-only float32 view and returns ``(accuracy,
loss)``; the server stamps them with the snapshot's time, so its TSV,
``--target-accuracy`` and traces behave as for a built-in model. A PyTorch
module should score in ``eval()`` mode (Dropout off, BatchNorm on its
running statistics); ``dmlps.torch.evaluator`` does so.
"""

from dmlps._dmlps import (  # noqa: F401
    Evaluator,
    Worker,
    __version__,
    load_test,
    load_train,
    model_initialize,
    model_loss_and_gradient,
    set_log_level,
)

__all__ = ["Evaluator", "Worker", "__version__", "load_test", "load_train", "model_initialize",
           "model_loss_and_gradient", "set_log_level"]
