#!/usr/bin/python3
"""A PyTorch evaluator for `dmlps-bench run --evaluator-command`: scores
each snapshot of the server at DMLPS_SERVER with the module of worker.py
on the test set of DMLPS_DATA, so that a run of --model external can reach
its --target."""

import os

import torch

import dmlps
import dmlps.torch


def main():
    torch.set_num_threads(1)
    x, y = dmlps.load_test(os.environ.get("DMLPS_DATA", "fashion-mnist"))
    evaluator = dmlps.torch.evaluator(os.environ["DMLPS_SERVER"], dmlps.torch.mlp(784, [128], 10),
                                      torch.nn.CrossEntropyLoss(), torch.from_numpy(x),
                                      torch.from_numpy(y),
                                      connect_timeout_ms=120000)
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")


if __name__ == "__main__":
    main()
