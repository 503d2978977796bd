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

import argparse
import os
import sys

import torch

import dmlps.torch
import job


def main():
    parser = argparse.ArgumentParser(description="a PyTorch evaluator for the ResNet")
    parser.add_argument("server", nargs="?", default=os.environ.get("DMLPS_SERVER",
                                                                   "tcp://127.0.0.1:5555"))
    parser.add_argument("--data", default=os.environ.get("DMLPS_DATA", "fashion-mnist"))
    parser.add_argument("--samples", type=int, default=0,
                        help="score the first N test samples only (0: all)")
    args = parser.parse_args()
    if args.samples < 0:
        sys.exit(f"evaluator.py: error: --samples must be at least 0, got {args.samples}")
    torch.set_num_threads(1)
    x, y = job.test_data(args.data)
    if args.samples:
        x, y = x[:args.samples], y[:args.samples]
    evaluator = dmlps.torch.evaluator(args.server, job.model(), job.loss_fn(), x, y,
                                      connect_timeout_ms=120000)
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")


if __name__ == "__main__":
    main()
