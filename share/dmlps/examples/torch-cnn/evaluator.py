#!/usr/bin/python3
"""Scores the snapshots of a `dmlps-server --model external --evaluator`
training the CNN of model.py: test accuracy and loss on the test set of
the data set, which the server stamps with the snapshot's training time.
The server's address is the argument, else DMLPS_SERVER (as
`dmlps-bench run --evaluator-command` sets it). The server answers an
evaluator once the first worker has announced the model, which can take a
while on a busy machine (loading the data): hence the long connect
timeout."""

import os
import sys

import torch

import dmlps
import dmlps.torch
from model import cnn

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    args = example_cli.parse(example_cli.parser("a PyTorch evaluator for the CNN"))
    torch.set_num_threads(1)
    x, y = dmlps.load_test(args.data)
    evaluator = dmlps.torch.evaluator(args.server, cnn(), torch.nn.CrossEntropyLoss(),
                                      torch.from_numpy(x), torch.from_numpy(y),
                                      connect_timeout_ms=120000)
    example_cli.run_evaluator(evaluator)


if __name__ == "__main__":
    main()
