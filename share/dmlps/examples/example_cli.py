"""What the examples' worker.py and evaluator.py scripts share: their
command lines (the server's address, the data set, a straggler's slowdown,
the seed, a number of samples to score), the dmlps.Worker keywords that
`dmlps-bench run --worker-command` hands a worker (DMLPS_WORKER_OPTIONS),
and the line each prints when it ends. The scripts find this file in the
folder above their own: an example copied elsewhere takes it along."""

import argparse
import json
import os
import sys

import torch


def parser(description, data=True):
    """An argument parser with the server's address (the argument, else
    DMLPS_SERVER) and, unless ``data`` is False, --data (else DMLPS_DATA)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("server", nargs="?",
                   default=os.environ.get("DMLPS_SERVER", "tcp://127.0.0.1:5555"))
    if data:
        p.add_argument("--data", default=os.environ.get("DMLPS_DATA", "fashion-mnist"))
    return p


def add_worker_flags(p):
    """Adds a worker's --slowdown and --seed (else DMLPS_SEED) to ``p``."""
    p.add_argument("--slowdown", type=float,
                   help="straggle: sleep (K-1) times each step's compute time")
    p.add_argument("--seed", type=int, default=int(os.environ.get("DMLPS_SEED", "1")),
                   help="seed of the initial model (the first worker's becomes the server's)")
    return p


def add_samples_flag(p, what="test samples"):
    """Adds an evaluator's --samples N (score the first N ``what`` only)."""
    p.add_argument("--samples", type=int, default=0,
                   help=f"score the first N {what} only (0: all)")
    return p


def parse(p):
    """The arguments ``p`` parses; exits with one line when --samples (if
    ``p`` has it) is negative."""
    args = p.parse_args()
    if getattr(args, "samples", 0) < 0:
        sys.exit(f"evaluator.py: error: --samples must be at least 0, got {args.samples}")
    return args


def evaluator_setup(p, what="test samples"):
    """The arguments of an evaluator's parser ``p`` with --samples added
    (parse); PyTorch on one thread, the server's evaluations being the
    evaluator's only work."""
    args = parse(add_samples_flag(p, what))
    torch.set_num_threads(1)
    return args


def first_samples(args, x, y):
    """x and y cut to the first args.samples rows (all when 0)."""
    return (x[:args.samples], y[:args.samples]) if args.samples else (x, y)


def worker_options(args=None):
    """The dmlps.Worker keywords of DMLPS_WORKER_OPTIONS, --slowdown (in
    ``args``) over them; sets PyTorch's threads to their "threads" (1)."""
    options = json.loads(os.environ.get("DMLPS_WORKER_OPTIONS", "{}"))
    if args is not None and args.slowdown is not None:
        options["slowdown"] = args.slowdown
    torch.set_num_threads(options.get("threads", 1))
    return options


def worker_setup(description):
    """A worker's arguments (parser, add_worker_flags) and its dmlps.Worker
    keywords (worker_options); seeds PyTorch with --seed, for the initial
    model."""
    args = parse(add_worker_flags(parser(description)))
    options = worker_options(args)
    torch.manual_seed(args.seed)
    return args, options


def run_worker(worker, options):
    """Runs ``worker`` to the end and prints one line of what it did."""
    report = worker.run()
    who = f"rank {options['rank']} " if "rank" in options else ""
    print(f"{who}(slowdown {options.get('slowdown', 1):g}): {report['steps']} steps, "
          f"{report['samples']} samples, {report['seconds']:.1f} s: {report['stop_reason']}")
    return report


def run_evaluator(evaluator):
    """Runs ``evaluator`` to the end and prints one line of what it did."""
    report = evaluator.run()
    print(f"{report['snapshots']} snapshots: {report['stop_reason']}")
    return report
