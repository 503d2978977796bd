#!/usr/bin/python3
"""A PyTorch evaluator for `dmlps-bench run --evaluator-command`: scores
each snapshot of the server at DMLPS_SERVER with the module of worker.py
on the test set of DMLPS_DATA, so that a run of --model external can reach
its --target. --samples N scores the first N test samples only."""

import argparse
import os
import sys

import torch

import dmlps
import dmlps.torch


def main():
    parser = argparse.ArgumentParser(description="a PyTorch evaluator for dmlps-bench run")
    parser.add_argument("--samples", type=int, default=0,
                        help="score the first N test samples only (0: all)")
    args = parser.parse_args()
    if args.samples < 0:
        sys.exit(f"evaluator.py: error: --samples must be at least 0, got {args.samples}")
    torch.set_num_threads(1)
    x, y = dmlps.load_test(os.environ.get("DMLPS_DATA", "fashion-mnist"))
    if args.samples:
        x, y = x[:args.samples], y[:args.samples]
    evaluator = dmlps.torch.evaluator(os.environ["DMLPS_SERVER"], dmlps.torch.mlp(784, [128], 10),
                                      torch.nn.CrossEntropyLoss(), torch.from_numpy(x),
                                      torch.from_numpy(y),
                                      connect_timeout_ms=120000)
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")


if __name__ == "__main__":
    main()
