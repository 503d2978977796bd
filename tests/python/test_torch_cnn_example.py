"""The PyTorch CNN example (share/dmlps/examples/torch-cnn) trains a model
the server does not know to 0.70 test accuracy both ways its README gives:
by hand (dmlps-server --model external --evaluator under backup, two
worker.py, one of them a straggler, and evaluator.py) and under dmlps-bench run, whose
straggler profile reaches the worker through DMLPS_WORKER_OPTIONS."""

import csv
import json
import os
import subprocess
import sys

import harness

example = os.path.join(harness.EXAMPLES, "torch-cnn")
worker_py = os.path.join(example, "worker.py")
evaluator_py = os.path.join(example, "evaluator.py")

# By hand, as README.md shows it.
server = harness.Server("--model", "external", "--evaluator", "--workers", "2", "--policy", "backup",
                        "--lr", "0.05", "--target-accuracy", "0.70", "--max-seconds", "60",
                        "--eval-every", "20")
children = [harness.start_script([worker_py, server.endpoint], "worker-0"),
            harness.start_script([worker_py, server.endpoint, "--slowdown", "4"], "worker-1"),
            harness.start_script([evaluator_py, server.endpoint], "evaluator")]
if server.wait(120) != 0:
    harness.fail("dmlps-server failed")
outputs = harness.finish_scripts(children)
if not all("target accuracy reached" in out for out in outputs[:2]):
    harness.fail(f"the workers did not stop at the target: {outputs}")
if "slowdown 4" not in outputs[1] or "snapshots" not in outputs[2]:
    harness.fail(f"the straggler or the evaluator said otherwise: {outputs}")
accuracy = server.last_accuracy()
if accuracy < 0.70 or "reached accuracy" not in server.log_text():
    harness.fail(f"final accuracy {accuracy} is below 0.70")
print(f"by hand: accuracy {accuracy}")

# Under dmlps-bench run: the worker takes the bench's address and profile.
out_dir = os.path.join(harness.WORK, "bench")
bench = subprocess.run(
    [os.path.join(harness.BIN, "dmlps-bench"), "run", "--workers", "2", "--slowdown", "1,4",
     "--policies", "asp", "--model", "external", "--batch", "64", "--lr", "0.05",
     "--target", "0.70", "--eval-every", "20", "--max-seconds", "60", "--format", "json",
     "--quiet", "--out", out_dir, "--worker-command", f"{sys.executable} '{worker_py}'",
     "--evaluator-command", f"{sys.executable} '{evaluator_py}'"],
    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=150)
if bench.returncode != 0:
    harness.fail(f"dmlps-bench run exited {bench.returncode}: {bench.stderr[-2000:]}")
run = json.loads(bench.stdout)["runs"][0]
if not run["reached"] or run["accuracy"] < 0.70:
    harness.fail(f"the bench run did not reach 0.70: {run}")
with open(os.path.join(out_dir, "asp-1", "worker-1.log")) as f:
    if "rank 1 (slowdown 4)" not in f.read():
        harness.fail("worker 1 did not take the bench's slowdown 4")
with open(os.path.join(out_dir, "asp-1", "server.tsv")) as f:
    rows = list(csv.reader(f, delimiter="\t"))
if max(float(r[2]) for r in rows[1:]) < 0.70:
    harness.fail("no evaluation at 0.70 in the bench's server.tsv")
print(f"dmlps-bench: {json.dumps(run)}")
