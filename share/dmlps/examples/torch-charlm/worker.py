#!/usr/bin/python3
"""A dmlps worker training the character-level transformer of job.py on its
shard of the fortunes corpus through dmlps.torch. Run it by hand (see
README.md) or as `dmlps-bench run --worker-command`: then the server's
address, the seed and this worker's straggler profile come from the
bench's DMLPS_* variables (DMLPS_WORKER_OPTIONS: dmlps.Worker's keywords),
and flags given here win over them. With --local-adamw (for localsgd and
async-localsgd) its local steps are job.local_optimizer()'s AdamW steps,
DiLoCo's inner optimizer, instead of the server's --lr SGD."""

import argparse
import json
import os
import sys

import torch

import dmlps
import dmlps.torch
import job


def main():
    parser = argparse.ArgumentParser(
        description=f"a dmlps worker training the {job.NAME} character-level transformer")
    parser.add_argument("server", nargs="?", default=os.environ.get("DMLPS_SERVER",
                                                                   "tcp://127.0.0.1:5555"))
    parser.add_argument("--corpus", default=job.CORPUS, help="the fortunes files' folder")
    parser.add_argument("--slowdown", type=float,
                        help="straggle: sleep (K-1) times each step's compute time")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("DMLPS_SEED", "1")),
                        help="seed of the initial model (the first worker's becomes the server's)")
    parser.add_argument("--local-adamw", action="store_true",
                        help="localsgd, async-localsgd: take the local steps with AdamW "
                             "(DiLoCo's inner optimizer)")
    args = parser.parse_args()

    options = json.loads(os.environ.get("DMLPS_WORKER_OPTIONS", "{}"))
    if args.slowdown is not None:
        options["slowdown"] = args.slowdown
    torch.set_num_threads(options.get("threads", 1))
    try:
        x, y = job.train_data(args.corpus)
    except FileNotFoundError as e:
        sys.exit(f"worker.py: error: {e}")
    torch.manual_seed(args.seed)
    module = job.model()
    if args.local_adamw:
        options["local_optimizer"] = job.local_optimizer(module)
    worker = dmlps.torch.worker(args.server, module, job.loss_fn(), x, y, **options)
    report = worker.run()
    who = f"rank {options['rank']} " if "rank" in options else ""
    print(f"{who}(slowdown {options.get('slowdown', 1):g}): {report['steps']} steps, "
          f"{report['samples']} samples, {report['seconds']:.1f} s: {report['stop_reason']}")


if __name__ == "__main__":
    main()
