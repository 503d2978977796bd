"""Each dmlps exception in the situation that raises it: no server
(UnavailableError, a TimeoutError), a server that goes away
(ServerLostError), a layout or a role the server refuses (RefusedError),
a server of another protocol (ProtocolError), a computation of another
size than the server's model (ConfigError), missing, damaged and
unwritable files (NotFoundError, DataLossError, InputOutputError), and an
evaluation out of range (InternalError). Each is a dmlps.Error and, where
one fits, the built-in exception a caller would catch."""

import os
import threading
import time

import harness

import dmlps
import numpy as np

SOFTMAX_PARAMS = 7850


def zero_gradient(params, sample_ids, grad):
    grad[:] = 0
    time.sleep(0.005)
    return 1.0


def expect(thread_or_error, cls, builtin, *words):
    """Checks an exception (or a WorkerThread's): of `cls`, a dmlps.Error,
    of the built-in `builtin` too (None: of no other built-in exception
    than Exception), its message naming each of `words`."""
    error = getattr(thread_or_error, "error", thread_or_error)
    if not isinstance(error, cls):
        harness.fail(f"expected {cls.__name__}, got {type(error).__name__}: {error}")
    if not isinstance(error, dmlps.Error):
        harness.fail(f"{cls.__name__} is not a dmlps.Error")
    if builtin is not None and not isinstance(error, builtin):
        harness.fail(f"{cls.__name__} is not a {builtin.__name__}")
    for word in words:
        if word not in str(error):
            harness.fail(f"{cls.__name__}: {error} does not say {word!r}")
    print(f"{cls.__name__}: {error}")


def raised(call):
    try:
        call()
    except BaseException as e:  # noqa: B902 (kept for the test to judge)
        return e
    harness.fail("nothing was raised")


def run_bounded(runner, seconds=60):
    """Runs a Worker or Evaluator on a thread, waits for it; its thread."""
    thread = harness.WorkerThread(runner)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        runner.stop()
        harness.fail(f"still running after {seconds} s")
    return thread


def check_no_server():
    quiet = harness.unused_endpoint()
    started = time.monotonic()
    worker = dmlps.Worker(quiet, 10, zero_gradient, connect_timeout_ms=300)
    expect(run_bounded(worker), dmlps.UnavailableError, TimeoutError, "no server answered")
    evaluator = dmlps.Evaluator(quiet, lambda params: (0.5, 1.0), connect_timeout_ms=300)
    error = run_bounded(evaluator).error
    expect(error, dmlps.UnavailableError, ConnectionError, "no server answered")
    if not isinstance(error, dmlps.ServerError):
        harness.fail("UnavailableError is not a ServerError")
    if time.monotonic() - started > 20:
        harness.fail("giving up on a missing server took over 20 s")


def check_other_protocol():
    foreign = harness.ForeignServer()
    foreign.start()
    worker = dmlps.Worker(foreign.endpoint, 10, zero_gradient, connect_timeout_ms=5000)
    expect(run_bounded(worker), dmlps.ProtocolError, ConnectionError, "protocol version 1")
    foreign.join(15)
    if not foreign.answered:
        harness.fail("the worker's Hello never reached the foreign server")


def check_refused():
    initial = os.path.join(harness.WORK, "initial.ckpt")
    layout = [("w", (2, 3)), ("b", (2,))]
    dmlps.write_initial(initial, layout, np.zeros(8, dtype=np.float32))
    server = harness.Server("--model", "external", "--initial", initial, "--workers", "1",
                            "--max-seconds", "60", name="external")
    other = [("w", (3, 3)), ("b", (3,))]
    worker = dmlps.Worker(server.endpoint, 10, zero_gradient, layout=other,
                          initial_values=np.zeros(12, dtype=np.float32))
    expect(run_bounded(worker), dmlps.RefusedError, ConnectionError,
           "the worker's layout is not the external model's", "[3,3]")
    evaluator = dmlps.Evaluator(server.endpoint, lambda params: (0.5, 1.0))
    expect(run_bounded(evaluator), dmlps.RefusedError, None, "evaluates snapshots itself")
    server.process.kill()


def check_other_size_and_lost():
    server = harness.Server("--model", "softmax", "--workers", "1", "--policy", "bsp",
                            "--max-iterations", "1000000", "--max-seconds", "120", name="lost")
    small = dmlps.Worker(server.endpoint, 10, zero_gradient, num_params=5)
    expect(run_bounded(small), dmlps.ConfigError, ValueError, "7850 parameters",
           "the computation 5")
    joined = threading.Event()

    def computing(params, sample_ids, grad):
        joined.set()
        return zero_gradient(params, sample_ids, grad)

    worker = dmlps.Worker(server.endpoint, 100, computing, num_params=SOFTMAX_PARAMS,
                          server_timeout_ms=500, reconnect_timeout_ms=500)
    thread = harness.WorkerThread(worker)
    thread.start()
    if not joined.wait(60):
        worker.stop()
        harness.fail("the worker did not train within 60 s")
    server.process.kill()
    server.process.wait(30)
    thread.join(30)
    if thread.is_alive():
        worker.stop()
        harness.fail("a worker whose server died still runs after 30 s")
    expect(thread, dmlps.ServerLostError, ConnectionError, "did not come back")
    if isinstance(thread.error, TimeoutError):
        harness.fail("a lost server is a TimeoutError, as if never reached")


def check_evaluator_errors():
    server = harness.Server("--model", "softmax", "--workers", "1", "--evaluator", "--policy",
                            "bsp", "--eval-every", "1", "--max-iterations", "1000000",
                            "--max-seconds", "120", name="evaluated")
    # An accuracy above 1 breaks the evaluator's contract.
    wrong = dmlps.Evaluator(server.endpoint, lambda params: (2.0, 0.5))
    wrong_thread = harness.WorkerThread(wrong)
    wrong_thread.start()
    worker = dmlps.Worker(server.endpoint, 100, zero_gradient, num_params=SOFTMAX_PARAMS,
                          server_timeout_ms=500, reconnect_timeout_ms=500)
    worker_thread = harness.WorkerThread(worker)
    worker_thread.start()
    wrong_thread.join(60)
    if wrong_thread.is_alive():
        wrong.stop()
        worker.stop()
        harness.fail("an evaluator answering accuracy 2 still runs after 60 s")
    expect(wrong_thread, dmlps.InternalError, RuntimeError, "accuracy 2")
    # The next evaluator scores properly until its server dies.
    welcomed = threading.Event()
    lost = dmlps.Evaluator(server.endpoint, lambda params: (0.5, 1.0),
                           on_join=lambda model, size: welcomed.set(), server_timeout_ms=500)
    lost_thread = harness.WorkerThread(lost)
    lost_thread.start()
    if not welcomed.wait(60):
        lost.stop()
        worker.stop()
        harness.fail("the second evaluator was not welcomed within 60 s")
    server.process.kill()
    server.process.wait(30)
    lost_thread.join(30)
    worker_thread.join(60)
    if lost_thread.is_alive() or worker_thread.is_alive():
        lost.stop()
        worker.stop()
        harness.fail("an evaluator or a worker of a dead server still runs")
    expect(lost_thread, dmlps.ServerLostError, ConnectionError, "no answer")


def check_files():
    missing = os.path.join(harness.WORK, "missing.ckpt")
    expect(raised(lambda: dmlps.read_checkpoint(missing)), dmlps.NotFoundError,
           FileNotFoundError, "missing.ckpt")
    worker = dmlps.Worker(harness.unused_endpoint(), 10, zero_gradient,
                          secret=os.path.join(harness.WORK, "no-secret"))
    expect(run_bounded(worker), dmlps.NotFoundError, OSError, "no-secret")
    path = os.path.join(harness.WORK, "model.ckpt")
    dmlps.write_initial(path, [("w", (4,))], np.arange(4, dtype=np.float32))
    data = bytearray(open(path, "rb").read())
    data[-10] ^= 0xFF
    damaged = os.path.join(harness.WORK, "damaged.ckpt")
    open(damaged, "wb").write(bytes(data))
    expect(raised(lambda: dmlps.read_checkpoint(damaged)), dmlps.DataLossError, ValueError,
           "damaged.ckpt", "checksum")
    unwritable = os.path.join(harness.WORK, "no-such-folder", "model.ckpt")
    expect(raised(lambda: dmlps.write_initial(unwritable, [("w", (4,))], np.zeros(4, "f4"))),
           dmlps.InputOutputError, OSError, "no-such-folder")


check_no_server()
check_other_protocol()
check_refused()
check_other_size_and_lost()
check_evaluator_errors()
check_files()
print("ok: every failure raises its own dmlps.Error")
