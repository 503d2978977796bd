"""SIGINT (Ctrl-C) stops a Python worker that waits on the server: run()
raises KeyboardInterrupt promptly and the process exits; the server sees
the worker leave."""

import os
import signal
import subprocess
import sys
import time

import harness

server = harness.Server("--workers", "2", "--policy", "bsp", "--model", "softmax",
                        "--max-iterations", "1000")
child_code = f"""
import numpy as np, dmlps
def compute(params, ids, grad):
    grad[:] = 0
    return 1.0
w = dmlps.Worker({server.endpoint!r}, 100, compute, num_params=7850)
try:
    w.run()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise SystemExit(3)
"""
log = os.path.join(harness.WORK, "child.log")
with open(log, "w") as out:
    child = subprocess.Popen([sys.executable, "-c", child_code], stdout=out,
                             stderr=subprocess.STDOUT)
harness._children.append(child)
# The worker has joined when the server says so; training then waits for a
# second worker that never comes, so the child is blocked in run().
deadline = time.monotonic() + 30
while "joined" not in server.log_text() and "worker 0" not in server.log_text():
    if time.monotonic() > deadline or child.poll() is not None:
        harness.fail("the worker did not join")
    time.sleep(0.1)
time.sleep(0.5)
child.send_signal(signal.SIGINT)
try:
    rc = child.wait(timeout=15)
except subprocess.TimeoutExpired:
    harness.fail("the worker did not stop within 15 s of SIGINT")
with open(log) as f:
    output = f.read()
if rc != 3 or "interrupted" not in output:
    harness.fail(f"exit status {rc}, output {output!r}")
print("ok: SIGINT raised KeyboardInterrupt in run()")
