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

import argparse
import os
import sys

import torch

import dmlps
import dmlps.torch
import job


def main():
    parser = argparse.ArgumentParser(
        description=f"a PyTorch evaluator for the {job.NAME} character-level transformer")
    parser.add_argument("server", nargs="?", default=os.environ.get("DMLPS_SERVER",
                                                                   "tcp://127.0.0.1:5555"))
    parser.add_argument("--corpus", default=job.CORPUS, help="the fortunes files' folder")
    parser.add_argument("--samples", type=int, default=0,
                        help="score the first N validation sequences only (0: all)")
    args = parser.parse_args()
    if args.samples < 0:
        sys.exit(f"evaluator.py: error: --samples must be at least 0, got {args.samples}")
    torch.set_num_threads(1)
    try:
        x, y = job.test_data(args.corpus)
    except FileNotFoundError as e:
        sys.exit(f"evaluator.py: error: {e}")
    if args.samples:
        x, y = x[:args.samples], y[:args.samples]
    torch.manual_seed(0)  # the values are the server's; this only builds the module
    evaluator = dmlps.torch.evaluator(args.server, job.model(), job.loss_fn(), x, y,
                                      batch=128, connect_timeout_ms=120000)
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")


if __name__ == "__main__":
    main()
