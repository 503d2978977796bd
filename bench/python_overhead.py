#!/usr/bin/python3
"""What the Python path costs a training step, over the C++ worker.

Trains the server's mlp:128 (batch 256, Fashion-MNIST, one worker, BSP,
a fixed number of iterations) with dmlps-worker, and with a dmlps.torch
worker whose callback is timed from inside, and reports medians over
--runs runs, per step:
  cpp_step      dmlps-worker's whole step (seconds / steps)
  py_step       the PyTorch worker's whole step
  binding       time in the worker's Computation::Compute outside the Python
                callback: taking the GIL, copying params into the callback's
                NumPy array and grad out of its own, the call, the loss
  copies        dmlps.torch's copies: flat parameters into the module and
                the gradients back into the flat vector
  overhead      binding + copies, also as a share of cpp_step (the goal is
                under 5%) and of py_step
The model's own arithmetic (PyTorch's versus Eigen's) is not overhead and
is reported apart (py_callback: the whole callback). BLAS runs on one
thread (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)), like the C++
worker's default --threads 1.

Usage: bench/python_overhead.py [--bin BUILD/cmd] [--runs 5] [--iterations 1000]
with the module on PYTHONPATH (BUILD/python in a build tree).
"""

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import dmlps  # noqa: E402
import dmlps.torch  # noqa: E402

torch.set_num_threads(1)
BATCH = 256


class TimedComputation(dmlps.torch.TorchComputation):
    """dmlps.torch's callback, timing the whole call and its copies."""

    def __init__(self, *args):
        super().__init__(*args)
        self.callback_s = self.copies_s = 0.0
        self.calls = 0

    def __call__(self, params, sample_ids, grad):
        start = time.perf_counter()
        self.load(params)
        loaded = time.perf_counter()
        loss = self.forward_backward(sample_ids)
        computed = time.perf_counter()
        self.store_gradient(grad)
        end = time.perf_counter()
        self.calls += 1
        self.callback_s += end - start
        self.copies_s += (loaded - start) + (end - computed)
        return loss


def start_server(bin_dir, work, iterations):
    endpoint_file = os.path.join(work, "endpoint")
    if os.path.exists(endpoint_file):
        os.remove(endpoint_file)
    server = subprocess.Popen(
        [os.path.join(bin_dir, "dmlps-server"), "--bind", "tcp://127.0.0.1:*", "--endpoint-file",
         endpoint_file, "--workers", "1", "--policy", "bsp", "--model", "mlp:128", "--batch",
         str(BATCH), "--max-iterations", str(iterations), "--eval-every", str(iterations)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (os.path.exists(endpoint_file) and os.path.getsize(endpoint_file) > 0):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            sys.exit("dmlps-server did not start")
        time.sleep(0.05)
    with open(endpoint_file) as f:
        return server, f.read().strip()


def cpp_step(bin_dir, work, iterations):
    server, endpoint = start_server(bin_dir, work, iterations)
    try:
        worker = subprocess.run([os.path.join(bin_dir, "dmlps-worker"), "--server", endpoint],
                                capture_output=True, text=True, timeout=300)
        server.wait(timeout=60)
    finally:
        server.kill()
    m = re.search(r"(\d+) steps, .* of ([0-9.]+) s", worker.stderr)
    if worker.returncode != 0 or not m:
        sys.exit("dmlps-worker failed:\n" + worker.stderr)
    return float(m.group(2)) / int(m.group(1))


def python_step(bin_dir, work, iterations, x, y):
    server, endpoint = start_server(bin_dir, work, iterations)
    try:
        c = TimedComputation(dmlps.torch.mlp(784, [128], 10), torch.nn.CrossEntropyLoss(), x, y)
        report = dmlps.Worker(endpoint, c.num_samples, c, num_params=c.num_params).run()
        server.wait(timeout=60)
    finally:
        server.kill()
    steps = report["steps"]
    return {
        "py_step": report["seconds"] / steps,
        "py_callback": c.callback_s / c.calls,
        "binding": (report["compute_s"] - c.callback_s) / steps,
        "copies": c.copies_s / c.calls,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--bin", default=os.path.join(here, "..", "build", "cmd"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    dmlps.set_log_level("warning")
    x, y = dmlps.load_train("fashion-mnist")
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for run in range(args.runs):
            row = python_step(args.bin, work, args.iterations, x, y)
            row["cpp_step"] = cpp_step(args.bin, work, args.iterations)
            rows.append(row)
            print(f"run {run + 1}: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in row.items()),
                  file=sys.stderr)
    median = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    overhead = statistics.median(r["binding"] + r["copies"] for r in rows)
    share_cpp = statistics.median((r["binding"] + r["copies"]) / r["cpp_step"] for r in rows)
    share_py = statistics.median((r["binding"] + r["copies"]) / r["py_step"] for r in rows)
    print("model mlp:128, batch %d, %d iterations, medians of %d runs (ms per step)"
          % (BATCH, args.iterations, args.runs))
    for k in ("cpp_step", "py_step", "py_callback", "binding", "copies"):
        print(f"{k}\t{median[k] * 1e3:.3f}")
    print(f"overhead\t{overhead * 1e3:.3f}")
    print(f"overhead_share_of_cpp_step\t{share_cpp:.4f}")
    print(f"overhead_share_of_py_step\t{share_py:.4f}")


if __name__ == "__main__":
    main()
