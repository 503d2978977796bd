#!/usr/bin/python3
"""A dmlps worker training the small CNN of model.py on its shard of
Fashion-MNIST through dmlps.torch. Run it by hand (see README.md) or as
`dmlps-bench run --worker-command`: then the server's address, the data
set, the seed and this worker's straggler profile come from the bench's
DMLPS_* variables (DMLPS_WORKER_OPTIONS: dmlps.Worker's keywords), and
flags given here win over them."""

import os
import sys

import torch

import dmlps
import dmlps.torch
from model import cnn

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    args, options = example_cli.worker_setup("a dmlps worker training a PyTorch CNN")
    x, y = dmlps.load_train(args.data)
    worker = dmlps.torch.worker(args.server, cnn(), torch.nn.CrossEntropyLoss(),
                                torch.from_numpy(x), torch.from_numpy(y), **options)
    example_cli.run_worker(worker, options)


if __name__ == "__main__":
    main()
