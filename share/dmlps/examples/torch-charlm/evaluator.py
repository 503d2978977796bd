#!/usr/bin/python3
"""Scores the snapshots of a `dmlps-server --model external --evaluator`
training the character-level transformer of job.py: the validation loss
(mean cross-entropy per character, nats) and the share of characters
predicted right, on the last 5% of the corpus, which the server stamps with
the snapshot's training time. The server's address is the argument, else
DMLPS_SERVER (as `dmlps-bench run --evaluator-command` sets it). The
server answers an evaluator once the first worker has announced the model,
which can take a while on a busy machine: hence the long connect timeout.

Scoring all 1,982 validation sequences takes about 8 s of one core;
--samples scores the first N sequences only, for quick runs."""

import os
import sys

import torch

import dmlps.torch
import job

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    parser = example_cli.parser(
        f"a PyTorch evaluator for the {job.NAME} character-level transformer", data=False)
    parser.add_argument("--corpus", default=job.CORPUS, help="the fortunes files' folder")
    args = example_cli.evaluator_setup(parser, "validation sequences")
    try:
        x, y = example_cli.first_samples(args, *job.test_data(args.corpus))
    except FileNotFoundError as e:
        sys.exit(f"evaluator.py: error: {e}")
    torch.manual_seed(0)  # the values are the server's; this only builds the module
    evaluator = dmlps.torch.evaluator(args.server, job.model(), job.loss_fn(), x, y,
                                      batch=128, connect_timeout_ms=120000)
    example_cli.run_evaluator(evaluator)


if __name__ == "__main__":
    main()
