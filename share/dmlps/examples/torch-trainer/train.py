#!/usr/bin/python3
"""A dmlps worker that trains a PyTorch module: an MLP with the layout of
the server's built-in mlp:128, on this worker's shard of Fashion-MNIST.

    dmlps-server --workers 2 --model mlp:128 --target-accuracy 0.84 &
    ./train.py tcp://127.0.0.1:5555 &
    ./train.py tcp://127.0.0.1:5555 --slowdown 2

Only the module is the user's; dmlps.torch flattens its parameters and
gradients to the server's flat vector.
"""

import argparse

import torch

import dmlps
import dmlps.torch


def main():
    parser = argparse.ArgumentParser(description="a dmlps worker training a PyTorch MLP")
    parser.add_argument("server", nargs="?", default="tcp://127.0.0.1:5555")
    parser.add_argument("--data", default="fashion-mnist")
    parser.add_argument("--slowdown", type=float, default=1.0)
    args = parser.parse_args()
    torch.set_num_threads(1)

    module = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 10))
    computation = None

    def on_join(job):
        # The server says which shard is this worker's; load it then.
        nonlocal computation
        x, y = dmlps.load_train(args.data, job["shard_index"], job["shard_count"])
        computation = dmlps.torch.TorchComputation(module, torch.nn.CrossEntropyLoss(), x, y)
        return computation.num_samples

    def compute(params, sample_ids, grad):
        return computation(params, sample_ids, grad)

    num_params = sum(p.numel() for p in module.parameters())
    worker = dmlps.Worker(args.server, 0, compute, num_params=num_params, on_join=on_join,
                          slowdown=args.slowdown)
    report = worker.run()
    print(f"{report['steps']} steps, {report['samples']} samples: {report['stop_reason']}")


if __name__ == "__main__":
    main()
