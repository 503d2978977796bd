"""The PyTorch example (share/dmlps/examples/torch-trainer/train.py), run
as 2 processes that each load their shard when the server names it, trains
the server's mlp:128 to 0.80 test accuracy."""

import os
import subprocess
import sys

import harness

here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "..", "..", "share", "dmlps", "examples", "torch-trainer", "train.py")
server = harness.Server("--workers", "2", "--policy", "bsp", "--model", "mlp:128",
                        "--target-accuracy", "0.80", "--max-iterations", "3000",
                        "--eval-every", "25")
children = []
for rank, slowdown in ((0, "1"), (1, "2")):
    log = open(os.path.join(harness.WORK, f"example-{rank}.log"), "w")
    child = subprocess.Popen([sys.executable, example, server.endpoint, "--slowdown", slowdown],
                             stdout=subprocess.PIPE, stderr=log, text=True)
    harness._children.append(child)
    children.append(child)
if server.wait(120) != 0:
    harness.fail("dmlps-server failed")
for child in children:
    try:
        out, _ = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        harness.fail("an example worker did not exit")
    if child.returncode != 0 or "target accuracy reached" not in out:
        harness.fail(f"an example worker exited {child.returncode}: {out!r}")
log = server.log_text()
if "reached accuracy" not in log or "with 30000 samples" not in open(
        os.path.join(harness.WORK, "example-0.log")).read():
    harness.fail("the example did not train on its shard to the target")
print(f"ok: accuracy {server.last_accuracy()}")
