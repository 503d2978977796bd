#!/usr/bin/python3
"""A dmlps worker training the character-level transformer of job.py on its
shard of the fortunes corpus through dmlps.torch. Run it by hand (see
README.md) or as `dmlps-bench run --worker-command`: then the server's
address, the seed and this worker's straggler profile come from the
bench's DMLPS_* variables (DMLPS_WORKER_OPTIONS: dmlps.Worker's keywords),
and flags given here win over them. With --local-adamw (for localsgd and
async-localsgd) its local steps are job.local_optimizer()'s AdamW steps,
DiLoCo's inner optimizer, instead of the server's --lr SGD."""

import os
import sys

import torch

import dmlps.torch
import job

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import example_cli  # noqa: E402  (the examples' shared command lines, in the folder above)


def main():
    parser = example_cli.parser(
        f"a dmlps worker training the {job.NAME} character-level transformer", data=False)
    parser.add_argument("--corpus", default=job.CORPUS, help="the fortunes files' folder")
    example_cli.add_worker_flags(parser)
    parser.add_argument("--local-adamw", action="store_true",
                        help="localsgd, async-localsgd: take the local steps with AdamW "
                             "(DiLoCo's inner optimizer)")
    args = parser.parse_args()
    options = example_cli.worker_options(args)
    try:
        x, y = job.train_data(args.corpus)
    except FileNotFoundError as e:
        sys.exit(f"worker.py: error: {e}")
    torch.manual_seed(args.seed)
    module = job.model()
    if args.local_adamw:
        options["local_optimizer"] = job.local_optimizer(module)
    worker = dmlps.torch.worker(args.server, module, job.loss_fn(), x, y, **options)
    example_cli.run_worker(worker, options)


if __name__ == "__main__":
    main()
