#!/usr/bin/python3
"""dmlps.torch on a GPU, the check gpu-check.sh runs (alone with
--torch-only): a small MLP on a CUDA device

  1. computes the same gradient for one step as the same module on the
     CPU (numpy.allclose, rtol 1e-4, TF32 off), through TorchComputation's
     pinned-buffer transfers;
  2. trains for --steps steps against a real dmlps-server on loopback
     (--model external, BSP, one worker), while dmlps.torch.evaluator,
     with its module on the device too, scores the snapshots; the last
     snapshot's loss must be below the first's.

The data are synthetic (a LIBSVM file under --out, written here), so the
check needs no data set. Figures go to stdout; the server's output and log
to --out. Exit status: 0 passed, or skipped because torch sees no CUDA
device (the reason is printed); 1 a check failed; 64 usage.
"""

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import threading
import time

NAME = "gpu-check-torch.py"


def fail(message):
    print(f"{NAME}: error: {message}", file=sys.stderr)
    sys.exit(1)


def write_libsvm(path, rows, features, classes, seed):
    """rows samples of a linear classifier's classes, dense, to path."""
    import numpy as np
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(0).normal(size=(features, classes))
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = (x @ w).argmax(axis=1)
    with open(path, "w") as f:
        for row, label in zip(x, y):
            f.write(f"{label} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(row)) + "\n")


def compare_one_step(device, x, y, hidden):
    """The gradient and loss of one step on device against the CPU's."""
    import numpy as np
    import torch

    import dmlps.torch
    torch.manual_seed(1)
    on_cpu = dmlps.torch.mlp(x.shape[1], hidden, int(y.max()) + 1)
    on_device = copy.deepcopy(on_cpu).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    cpu = dmlps.torch.TorchComputation(on_cpu, loss_fn, x, y)
    dev = dmlps.torch.TorchComputation(on_device, loss_fn, x, y)
    params = cpu.initial_values()
    ids = np.arange(0, len(x), 7, dtype=np.int64)[:256]
    want = np.zeros_like(params)
    got = np.full_like(params, np.nan)
    want_loss = cpu(params, ids, want)
    got_loss = dev(params, ids, got)
    scale = float(np.abs(want).max())
    error = float(np.abs(got - want).max())
    print(f"one step on {device}: loss {got_loss:.6f} (CPU {want_loss:.6f}), largest gradient "
          f"difference {error:.3g} (largest entry {scale:.3g})")
    if not np.allclose(got, want, rtol=1e-4, atol=1e-6 * scale):
        fail(f"the gradient on {device} differs from the CPU's by up to {error:.3g}")
    if abs(got_loss - want_loss) > 1e-4 * max(1.0, abs(want_loss)):
        fail(f"the loss on {device} is {got_loss}, on the CPU {want_loss}")


def start_server(bin_dir, out, data, steps):
    # The job secret the evaluator presents (docs/security.md).
    secret = os.path.join(out, "job.secret")
    subprocess.run([os.path.join(bin_dir, "dmlps-keygen"), "-q", "--force", "--secret", secret],
                   check=True)
    os.environ["DMLPS_SECRET_FILE"] = secret
    endpoint_file = os.path.join(out, "torch-server.endpoint")
    if os.path.exists(endpoint_file):
        os.remove(endpoint_file)
    with open(os.path.join(out, "torch-server.tsv"), "w") as tsv, \
            open(os.path.join(out, "torch-server.log"), "w") as log:
        server = subprocess.Popen(
            [os.path.join(bin_dir, "dmlps-server"), "--bind", "tcp://127.0.0.1:*",
             "--endpoint-file", endpoint_file, "--data", f"libsvm:{data}", "--model", "external",
             "--evaluator", "--workers", "1", "--policy", "bsp", "--batch", "64", "--lr", "0.1",
             "--max-iterations", str(steps), "--eval-every", "10"], stdout=tsv, stderr=log)
    deadline = time.monotonic() + 30
    while not (os.path.exists(endpoint_file) and os.path.getsize(endpoint_file) > 0):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            fail(f"dmlps-server did not listen within 30 s (see {out}/torch-server.log)")
        time.sleep(0.05)
    with open(endpoint_file) as f:
        return server, f.read().strip()


def train_against_server(device, bin_dir, out, data, steps, hidden):
    """Trains on device with a server; returns the evaluations' losses."""
    import torch

    import dmlps
    import dmlps.torch
    x, y = (torch.from_numpy(a) for a in dmlps.load_train(f"libsvm:{data}"))
    x_test, y_test = (torch.from_numpy(a) for a in dmlps.load_test(f"libsvm:{data}"))
    classes = int(y.max()) + 1
    server, endpoint = start_server(bin_dir, out, data, steps)
    try:
        torch.manual_seed(2)
        loss_fn = torch.nn.CrossEntropyLoss()
        modules = [dmlps.torch.mlp(x.shape[1], hidden, classes).to(device) for _ in range(2)]
        worker = dmlps.torch.worker(endpoint, modules[0], loss_fn, x, y,
                                    connect_timeout_ms=30000)
        evaluator = dmlps.torch.evaluator(endpoint, modules[1], loss_fn, x_test, y_test,
                                          connect_timeout_ms=30000)
        results = {}
        threads = [threading.Thread(target=lambda k=k, r=r: results.__setitem__(k, r.run()),
                                    daemon=True)
                   for k, r in (("worker", worker), ("evaluator", evaluator))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            worker.stop()
            evaluator.stop()
            fail("the worker or the evaluator was still running after 120 s")
        rc = server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if rc != 0 or set(results) != {"worker", "evaluator"}:
        fail(f"dmlps-server exited {rc}; reports {results} (see {out}/torch-server.log)")
    with open(os.path.join(out, "torch-server.tsv")) as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    print(f"{steps} steps on {device}: worker {results['worker']}, evaluator "
          f"{results['evaluator']}")
    if results["worker"]["steps"] < steps or len(rows) < 2:
        fail(f"the worker made {results['worker']['steps']} steps and the server logged "
             f"{len(rows)} evaluations")
    first, last = float(rows[0][3]), float(rows[-1][3])
    print(f"test loss {first:.4f} at iteration {rows[0][1]}, {last:.4f} at {rows[-1][1]}; "
          f"accuracy {float(rows[-1][2]):.4f}")
    if not last < first:
        fail(f"training on {device} did not lower the test loss ({first} -> {last})")


class Parser(argparse.ArgumentParser):
    """argparse, with the usage errors' exit status of sysexits.h (64)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{NAME}: error: {message}", file=sys.stderr)
        sys.exit(64)


def main():
    parser = Parser(prog=NAME, description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the folder holding dmlps-server")
    parser.add_argument("--out", help="where the data and the server's output go "
                        "(default: a temporary folder, removed)")
    parser.add_argument("--device", default="cuda", help="torch device (default cuda)")
    parser.add_argument("--steps", type=int, default=40, help="training steps (default 40)")
    args = parser.parse_args()
    if args.steps < 10:
        parser.error(f"--steps: want 10 or more, got {args.steps}")
    try:
        import numpy  # noqa: F401
        import torch
    except ImportError as e:
        print(f"skipped: {sys.executable} cannot import torch or numpy ({e})")
        return 0
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        print(f"skipped: torch.cuda.is_available() is false (torch {torch.__version__} in "
              f"{sys.executable}, built for CUDA {torch.version.cuda})")
        return 0
    try:
        import dmlps  # noqa: F401
    except ImportError as e:
        fail(f"no dmlps Python module on PYTHONPATH ({e})")
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 as the CPU computes it
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="dmlps-gpu-check-torch.") as scratch:
        out = args.out or scratch
        os.makedirs(out, exist_ok=True)
        data = os.path.join(out, "torch-data.libsvm")
        write_libsvm(data, 4096, 16, 4, seed=1)
        write_libsvm(data + ".t", 1024, 16, 4, seed=2)
        x, y = (torch.from_numpy(a) for a in dmlps.load_train(f"libsvm:{data}"))
        compare_one_step(args.device, x, y, [64])
        train_against_server(args.device, args.bin, out, data, args.steps, [64])
    print(f"ok: dmlps.torch on {args.device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
