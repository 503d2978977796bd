#!/usr/bin/python3
"""A PyTorch evaluator for `dmlps-bench run --evaluator-command`: scores
each snapshot of the server at DMLPS_SERVER (or the argument) with the
module of worker.py on the test set of DMLPS_DATA (or --data), so that a
run of --model external can reach its --target. --samples N scores the
first N test samples only."""

import os
import sys

import torch

import dmlps
import dmlps.torch

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    args = example_cli.evaluator_setup(
        example_cli.parser("a PyTorch evaluator for dmlps-bench run"))
    x, y = example_cli.first_samples(args, *dmlps.load_test(args.data))
    evaluator = dmlps.torch.evaluator(args.server, dmlps.torch.mlp(784, [128], 10),
                                      torch.nn.CrossEntropyLoss(), torch.from_numpy(x),
                                      torch.from_numpy(y), connect_timeout_ms=120000)
    example_cli.run_evaluator(evaluator)


if __name__ == "__main__":
    main()
