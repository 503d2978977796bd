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

import json
import os

import torch

import dmlps
import dmlps.torch


def main():
    options = json.loads(os.environ["DMLPS_WORKER_OPTIONS"])
    torch.set_num_threads(options.get("threads", 1))
    # The same initial model in every run, so the policies start alike.
    torch.manual_seed(int(os.environ.get("DMLPS_SEED", "1")))
    x, y = dmlps.load_train(os.environ.get("DMLPS_DATA", "fashion-mnist"))
    module = dmlps.torch.mlp(784, [128], 10)
    worker = dmlps.torch.worker(os.environ["DMLPS_SERVER"], module, torch.nn.CrossEntropyLoss(),
                                torch.from_numpy(x), torch.from_numpy(y), **options)
    report = worker.run()
    print(f"rank {options['rank']} (slowdown {options['slowdown']}): {report['steps']} steps, "
          f"{report['samples']} samples: {report['stop_reason']}")


if __name__ == "__main__":
    main()
