"""Shared pieces of the Python module's tests: a real dmlps-server on a free
loopback port, dmlps.Worker runs on threads, every wait bounded and every
child killed on exit. A test whose module or PyTorch is missing exits 77
(skipped)."""

import atexit
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    import numpy  # noqa: F401
    import torch

    import dmlps
    import dmlps.torch
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)

torch.set_num_threads(1)
BIN = os.environ.get("DMLPS_BIN", "")
WORK = tempfile.mkdtemp(prefix="dmlps-python.")
_children = []


def _cleanup():
    for child in _children:
        if child.poll() is None:
            child.kill()
            child.wait()
    shutil.rmtree(WORK, ignore_errors=True)


atexit.register(_cleanup)

# The job secret every server, evaluator and announcing worker of a test
# shares (docs/security.md): children inherit it, dmlps.Worker and
# dmlps.Evaluator read it.
SECRET = os.path.join(WORK, "secret")
subprocess.run([os.path.join(BIN, "dmlps-keygen"), "--secret", SECRET], check=True,
               stderr=subprocess.DEVNULL)
os.environ["DMLPS_SECRET_FILE"] = SECRET


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    for name in sorted(os.listdir(WORK)):
        if name.endswith(".log"):
            with open(os.path.join(WORK, name)) as f:
                tail = f.readlines()[-15:]
            print(f"--- {name} (last 15 lines)", file=sys.stderr)
            sys.stderr.writelines(tail)
    sys.exit(1)


_data = None


def fashion_mnist():
    """The Fashion-MNIST training set as (x: n x 784 float32, y: n int64)
    tensors, loaded once, as dmlps-worker reads it."""
    global _data
    if _data is None:
        x, y = dmlps.load_train("fashion-mnist")
        _data = (torch.from_numpy(x), torch.from_numpy(y))
    return _data


class Server:
    """dmlps-server with ``args`` on a free loopback port; stdout (the TSV)
    and stderr go to files under WORK named after ``name``."""

    def __init__(self, *args, name="server"):
        self.tsv = os.path.join(WORK, f"{name}.tsv")
        self.log = os.path.join(WORK, f"{name}.log")
        endpoint_file = os.path.join(WORK, f"{name}.endpoint")
        with open(self.tsv, "w") as out, open(self.log, "w") as err:
            self.process = subprocess.Popen(
                [os.path.join(BIN, "dmlps-server"), "--bind", "tcp://127.0.0.1:*",
                 "--endpoint-file", endpoint_file, *args], stdout=out, stderr=err)
        _children.append(self.process)
        deadline = time.monotonic() + 30
        while not (os.path.exists(endpoint_file) and os.path.getsize(endpoint_file) > 0):
            if self.process.poll() is not None:
                fail("dmlps-server exited before listening")
            if time.monotonic() > deadline:
                fail("dmlps-server did not listen within 30 s")
            time.sleep(0.05)
        with open(endpoint_file) as f:
            self.endpoint = f.read().strip()

    def wait(self, seconds):
        """Waits for the server to exit; fails the test after ``seconds``."""
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            fail(f"dmlps-server still running after {seconds} s")

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def last_accuracy(self):
        with open(self.tsv) as f:
            lines = f.read().splitlines()
        if len(lines) < 2:
            fail("the server evaluated nothing")
        return float(lines[-1].split("\t")[2])


def unused_endpoint():
    """A loopback TCP address nothing listens on (a port the kernel just
    handed out and took back)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


class ForeignServer(threading.Thread):
    """A peer on a free loopback port that speaks ZeroMQ's wire protocol
    (ZMTP 3.0, NULL security, as a ROUTER) but another dmlps protocol: it
    answers the first message of the first peer with a header of protocol
    version 1. Written with the standard library alone; each socket wait is
    bounded (10 s)."""

    # msgpack of [1, 2, {}]: version 1, message type 2, an empty body.
    FOREIGN_HEADER = bytes([0x93, 0x01, 0x02, 0x80])

    def __init__(self):
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.listener.settimeout(10)
        self.endpoint = f"tcp://127.0.0.1:{self.listener.getsockname()[1]}"
        self.answered = False

    @staticmethod
    def _read(conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the peer hung up")
            data += chunk
        return data

    def _frame(self, conn):
        """(flags, body) of the next frame or command."""
        flags = self._read(conn, 1)[0]
        size = self._read(conn, 8 if flags & 0x02 else 1)
        return flags, self._read(conn, int.from_bytes(size, "big"))

    def run(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            try:
                # Greeting: signature, version 3.0, mechanism NULL, not as-server, filler.
                conn.sendall(b"\xff" + bytes(8) + b"\x7f" + bytes([3, 0]) +
                             b"NULL".ljust(20, b"\x00") + bytes(32))
                self._read(conn, 64)
                ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 6) + b"ROUTER"
                conn.sendall(bytes([0x04, len(ready)]) + ready)
                flags, _ = self._frame(conn)
                while flags & 0x04:  # commands: the peer's READY
                    flags, _ = self._frame(conn)
                while flags & 0x01:  # the rest of the peer's first message
                    flags, _ = self._frame(conn)
                conn.sendall(bytes([0x00, len(self.FOREIGN_HEADER)]) + self.FOREIGN_HEADER)
                self.answered = True
                self._read(conn, 1)  # until the peer hangs up (or 10 s)
            except OSError:
                pass


class WorkerThread(threading.Thread):
    """Runs one dmlps.Worker on a thread; afterwards ``report`` holds what
    run() returned or ``error`` what it raised."""

    def __init__(self, worker):
        super().__init__(daemon=True)
        self.worker = worker
        self.report = None
        self.error = None

    def run(self):
        try:
            self.report = self.worker.run()
        except BaseException as e:  # noqa: B902 (kept for the test to judge)
            self.error = e


def run_workers(workers, seconds):
    """Runs the workers at once and waits for all of them; fails the test
    when one is still running after ``seconds`` (it is stopped first)."""
    threads = [WorkerThread(w) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        for t in threads:
            t.worker.stop()
        fail(f"a worker was still running after {seconds} s")
    return threads


def train(server, workers, seconds, what="a worker"):
    """Runs the workers against ``server`` (run_workers, ``seconds``); fails
    the test unless the server then exits 0 within 30 s and no worker,
    named ``what`` in the message, raised. Returns the threads."""
    threads = run_workers(workers, seconds)
    if server.wait(30) != 0:
        fail(f"dmlps-server failed under {what}")
    for t in threads:
        if t.error is not None:
            fail(f"{what} raised {t.error!r}")
    return threads


# The examples' folder: share/dmlps/examples.
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "share", "dmlps",
                        "examples")


def start_script(args, name, python=sys.executable):
    """Starts ``python args...``, its stdout piped and its stderr written to
    WORK/name.log; killed on exit."""
    log = open(os.path.join(WORK, f"{name}.log"), "w")
    child = subprocess.Popen([python, *args], stdout=subprocess.PIPE, stderr=log, text=True)
    _children.append(child)
    return child


def finish_scripts(children, what="an example process"):
    """Waits for each child (30 s each); fails the test unless every one
    exits 0. Returns their outputs, in order."""
    outputs = []
    for child in children:
        try:
            out, _ = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            fail(f"{what} did not exit")
        if child.returncode != 0:
            fail(f"{what} exited {child.returncode}: {out!r}")
        outputs.append(out)
    return outputs


def torch_workers(endpoint, count, model_hidden=(128,), options=None, seed=0):
    """``count`` workers training PyTorch MLPs with the layout of the
    server's mlp:H (softmax for no hidden layer) on Fashion-MNIST; worker i
    gets the keyword options ``options[i]``."""
    x, y = fashion_mnist()
    workers = []
    for i in range(count):
        torch.manual_seed(seed + i)
        module = dmlps.torch.mlp(784, list(model_hidden), 10)
        extra = (options or {}).get(i, {})
        workers.append(dmlps.torch.worker(endpoint, module, torch.nn.CrossEntropyLoss(), x, y,
                                          **extra))
    return workers
