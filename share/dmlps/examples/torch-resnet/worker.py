#!/usr/bin/python3
"""A dmlps worker training the ResNet of job.py on its shard of
Fashion-MNIST through dmlps.torch: it computes gradients only, and the
server steps the model with the job's AdamW recipe (job.server_flags). The
module's BatchNorm statistics travel beside the gradient as the model's
state, which the server averages (docs/module-state.md). Run it by hand
(see README.md) or as `dmlps-bench run --worker-command`: then the
server's address, the data set, the seed and this worker's straggler
profile come from the bench's DMLPS_* variables (DMLPS_WORKER_OPTIONS:
dmlps.Worker's keywords), and flags given here win over them."""

import argparse
import json
import os

import torch

import dmlps.torch
import job


def main():
    parser = argparse.ArgumentParser(description="a dmlps worker training a PyTorch ResNet")
    parser.add_argument("server", nargs="?", default=os.environ.get("DMLPS_SERVER",
                                                                   "tcp://127.0.0.1:5555"))
    parser.add_argument("--data", default=os.environ.get("DMLPS_DATA", "fashion-mnist"))
    parser.add_argument("--slowdown", type=float,
                        help="straggle: sleep (K-1) times each step's compute time")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("DMLPS_SEED", "1")),
                        help="seed of the initial model (the first worker's becomes the server's)")
    args = parser.parse_args()

    options = json.loads(os.environ.get("DMLPS_WORKER_OPTIONS", "{}"))
    if args.slowdown is not None:
        options["slowdown"] = args.slowdown
    torch.set_num_threads(options.get("threads", 1))
    torch.manual_seed(args.seed)
    x, y = job.train_data(args.data)
    worker = dmlps.torch.worker(args.server, job.model(), job.loss_fn(), x, y, **options)
    report = worker.run()
    who = f"rank {options['rank']} " if "rank" in options else ""
    print(f"{who}(slowdown {options.get('slowdown', 1):g}): {report['steps']} steps, "
          f"{report['samples']} samples, {report['seconds']:.1f} s: {report['stop_reason']}")


if __name__ == "__main__":
    main()
