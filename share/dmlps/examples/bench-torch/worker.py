#!/usr/bin/python3
"""A PyTorch worker for `dmlps-bench run --worker-command`: an MLP with the
layout of the server's built-in mlp:128, trained on the worker's shard of
the data set the bench names, with the straggler profile the bench gives
this worker (DMLPS_WORKER_OPTIONS: dmlps.Worker's keywords).

    dmlps-bench run --workers 2 --slowdown 1,2 --model external --target 0.8 \\
        --policies bsp,backup:1 --worker-command 'python3 worker.py' \\
        --evaluator-command 'python3 evaluator.py'

With a built-in --model mlp:128 the server ignores the announced layout and
evaluates the model itself; with --model external the first worker's
layout and initial values become the model and evaluator.py scores it.
"""

import os
import sys

import torch

import dmlps
import dmlps.torch

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    options = example_cli.worker_options()
    # The same initial model in every run, so the policies start alike.
    torch.manual_seed(int(os.environ.get("DMLPS_SEED", "1")))
    x, y = dmlps.load_train(os.environ.get("DMLPS_DATA", "fashion-mnist"))
    module = dmlps.torch.mlp(784, [128], 10)
    worker = dmlps.torch.worker(os.environ["DMLPS_SERVER"], module, torch.nn.CrossEntropyLoss(),
                                torch.from_numpy(x), torch.from_numpy(y), **options)
    example_cli.run_worker(worker, options)


if __name__ == "__main__":
    main()
