"""A compute callback that runs three times the server's --worker-timeout,
holding the GIL all along, is not taken for a lost worker: the worker's own
heartbeat thread speaks for it while it computes, and the run completes.
A worker stopped (SIGSTOP) inside such a callback falls silent and is still
declared lost within the timeout, and the run goes on without it. Every
wait is bounded."""

import os
import signal
import subprocess
import sys
import time

import harness

import dmlps

STEP_S = 3.0  # three times --worker-timeout
PARAMS = 7850  # softmax over 784 features and 10 classes


def slow_compute(params, sample_ids, grad):
    """A zero gradient after STEP_S seconds of Python that keeps the GIL
    (no sleep: a busy interpreter, as a long PyTorch step on the CPU)."""
    end = time.monotonic() + STEP_S
    while time.monotonic() < end:
        pass
    grad[:] = 0
    return 1.0


def fast_compute(params, sample_ids, grad):
    grad[:] = 0
    return 1.0


common = ("--model", "softmax", "--policy", "bsp", "--heartbeat-ms", "100",
          "--worker-timeout", "1", "--eval-every", "1")

# 1. Two slow workers, in this process: no loss, the run completes.
report = os.path.join(harness.WORK, "report")
server = harness.Server("--workers", "2", "--max-iterations", "3", "--report", report, *common)
workers = [dmlps.Worker(server.endpoint, 100, slow_compute, num_params=PARAMS, heartbeat_ms=100)
           for _ in range(2)]
for t in harness.train(server, workers, 60, "a slow worker"):
    if t.report["steps"] < 2:
        harness.fail(f"a slow worker made too few steps: {t.report}")
with open(report) as f:
    values = dict(line.rstrip("\n").split("\t", 1) for line in f)
if values["workers_lost"] != "0" or "lost worker" in server.log_text():
    harness.fail(f"a slow worker was taken for lost: {values.get('last_lost')}")
print(f"ok: steps of {STEP_S} s under --worker-timeout 1, no worker lost")

# 2. A slow worker stopped inside its callback: lost within the timeout.
server = harness.Server("--workers", "2", "--max-iterations", "40", *common, name="stopped")
child_code = f"""
import sys, time, dmlps
def compute(params, ids, grad):
    print("computing", flush=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pass
    grad[:] = 0
    return 1.0
dmlps.Worker({server.endpoint!r}, 100, compute, num_params={PARAMS}, heartbeat_ms=100).run()
"""
log = os.path.join(harness.WORK, "child.log")
with open(log, "w") as out:
    child = subprocess.Popen([sys.executable, "-c", child_code], stdout=out,
                             stderr=subprocess.STDOUT)
harness._children.append(child)
fast = harness.WorkerThread(dmlps.Worker(server.endpoint, 100, fast_compute,
                                         num_params=PARAMS, heartbeat_ms=100))
fast.start()


def wait_until(what, seconds, check):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            harness.fail(f"{what} within {seconds} s")
        time.sleep(0.05)


wait_until("the child worker did not start computing", 30,
           lambda: "computing" in open(log).read())
time.sleep(1.0)  # well inside its 30 s step: heartbeats only
if "lost worker" in server.log_text():
    harness.fail("the computing worker was lost before it was stopped")
child.send_signal(signal.SIGSTOP)
stopped_at = time.monotonic()
wait_until("the stopped worker was not declared lost", 8,
           lambda: "silent for 1 s" in server.log_text())
lost_after = time.monotonic() - stopped_at
child.kill()
child.wait()
fast.join(60)
if fast.is_alive():
    fast.worker.stop()
    harness.fail("the other worker did not finish within 60 s")
if server.wait(30) != 0:
    harness.fail("dmlps-server failed after losing the stopped worker")
if fast.error is not None:
    harness.fail(f"the other worker raised {fast.error!r}")
print(f"ok: a worker stopped inside its callback was declared lost after {lost_after:.2f} s")
