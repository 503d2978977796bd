#!/usr/bin/python3
"""Scores the snapshots of a `dmlps-server --model external --evaluator`
training the ResNet of job.py: test accuracy and loss on the test set of
the data set, in eval() mode (Dropout off, BatchNorm on the running
statistics the server averaged from the workers), which the server stamps
with the snapshot's training time. The server's address is the argument,
else DMLPS_SERVER (as `dmlps-bench run --evaluator-command` sets it). The
server answers an evaluator once the first worker has announced the model,
which can take a while on a busy machine (loading the data): hence the long
connect timeout. --samples N scores the first N test samples only."""

import os
import sys

import dmlps.torch
import job

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    args = example_cli.evaluator_setup(example_cli.parser("a PyTorch evaluator for the ResNet"))
    x, y = example_cli.first_samples(args, *job.test_data(args.data))
    evaluator = dmlps.torch.evaluator(args.server, job.model(), job.loss_fn(), x, y,
                                      connect_timeout_ms=120000)
    example_cli.run_evaluator(evaluator)


if __name__ == "__main__":
    main()
