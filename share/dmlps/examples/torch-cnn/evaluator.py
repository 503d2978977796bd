#!/usr/bin/python3
"""Scores the snapshots of a `dmlps-server --model external --evaluator`
training the CNN of model.py: test accuracy and loss on the test set of
the data set, which the server stamps with the snapshot's training time.
The server's address is the argument, else DMLPS_SERVER (as
`dmlps-bench run --evaluator-command` sets it). The server answers an
evaluator once the first worker has announced the model, which can take a
while on a busy machine (loading the data): hence the long connect
timeout."""

import argparse
import os

import torch

import dmlps
import dmlps.torch
from model import cnn


def main():
    parser = argparse.ArgumentParser(description="a PyTorch evaluator for the CNN")
    parser.add_argument("server", nargs="?", default=os.environ.get("DMLPS_SERVER",
                                                                   "tcp://127.0.0.1:5555"))
    parser.add_argument("--data", default=os.environ.get("DMLPS_DATA", "fashion-mnist"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    x, y = dmlps.load_test(args.data)
    evaluator = dmlps.torch.evaluator(args.server, cnn(), torch.nn.CrossEntropyLoss(),
                                      torch.from_numpy(x), torch.from_numpy(y),
                                      connect_timeout_ms=120000)
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")


if __name__ == "__main__":
    main()
