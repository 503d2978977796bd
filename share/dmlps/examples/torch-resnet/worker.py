#!/usr/bin/python3
"""A dmlps worker training the ResNet of job.py on its shard of
Fashion-MNIST through dmlps.torch: it computes gradients only, and the
server steps the model with the job's AdamW recipe (job.server_flags). The
module's BatchNorm statistics travel beside the gradient as the model's
state, which the server averages (docs/module-state.md). Run it by hand
(see README.md) or as `dmlps-bench run --worker-command`: then the
server's address, the data set, the seed and this worker's straggler
profile come from the bench's DMLPS_* variables (DMLPS_WORKER_OPTIONS:
dmlps.Worker's keywords), and flags given here win over them."""

import os
import sys

import dmlps.torch
import job

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    args, options = example_cli.worker_setup("a dmlps worker training a PyTorch ResNet")
    x, y = job.train_data(args.data)
    worker = dmlps.torch.worker(args.server, job.model(), job.loss_fn(), x, y, **options)
    example_cli.run_worker(worker, options)


if __name__ == "__main__":
    main()
