"""The character-level language model example
(share/dmlps/examples/torch-charlm) trains as its README gives it: a
dmlps-server (--model external --evaluator) with job.py's AdamW recipe
under bsp, two worker.py and evaluator.py, brings the validation loss down
from about ln 97 (the untrained model's); then the DiLoCo form, localsgd
with the workers' inner AdamW (--local-adamw) and the outer Nesterov flags,
brings it down too. Beside the runs: the model has at least a million
parameters, and torch_recipe's no-decay group is the set of tensors that
server_flags' --param-group globs select. Skipped (77) without the corpus,
Debian's fortunes package."""

import fnmatch
import math
import os
import signal
import subprocess
import sys

import harness

example = os.path.join(harness.EXAMPLES, "torch-charlm")
worker_py = os.path.join(example, "worker.py")
evaluator_py = os.path.join(example, "evaluator.py")
sys.path.insert(0, example)
import job  # noqa: E402

if not os.path.isdir(job.CORPUS):
    print(f"skip: no {job.CORPUS} (the Debian package fortunes)")
    sys.exit(77)


def start(args, name):
    # -X faulthandler: a child sent SIGABRT writes its Python stack to its log.
    return harness.start_script(["-X", "faulthandler", *args], name)


def losses(server):
    """The validation losses the server's TSV holds, in order."""
    with open(server.tsv) as f:
        rows = f.read().splitlines()[1:]
    return [float(r.split("\t")[3]) for r in rows]


def train(name, policy_flags, worker_flags, seconds):
    """Runs the server with ``policy_flags``, two workers and the evaluator
    to the end; fails unless every process exits 0 and the validation loss
    falls. Returns the server."""
    server = harness.Server("--model", "external", "--evaluator", "--workers", "2",
                            "--batch", str(job.BATCH), *policy_flags, name=name)
    children = [start([worker_py, server.endpoint, *worker_flags], f"{name}-worker-{i}")
                for i in range(2)]
    # The first 256 validation sequences: the whole set takes 8 s a snapshot.
    children.append(start([evaluator_py, server.endpoint, "--samples", "256"],
                          f"{name}-evaluator"))
    try:
        status = server.process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for child in children:  # where each one waits, into the logs fail() prints
            if child.poll() is None:
                child.send_signal(signal.SIGABRT)
                child.wait(10)
        harness.fail(f"{name}: dmlps-server still running after {seconds} s")
    if status != 0:
        harness.fail(f"{name}: dmlps-server exited {status}")
    harness.finish_scripts(children, f"{name}: an example process")
    seen = losses(server)
    if len(seen) < 2:
        harness.fail(f"{name}: {len(seen)} evaluations")
    if abs(seen[0] - math.log(job.VOCAB_SIZE)) > 0.3:
        harness.fail(f"{name}: the untrained model's loss {seen[0]} is far from "
                     f"ln {job.VOCAB_SIZE}")
    if not seen[-1] < seen[0] - 0.5:
        harness.fail(f"{name}: the validation loss went from {seen[0]} to {seen[-1]}")
    print(f"{name}: validation loss {' '.join(f'{v:.3f}' for v in seen)}")
    return server


# The model and the recipe's decay groups, beside the runs.
module = job.model()
count = sum(p.numel() for p in module.parameters())
if count < 1_000_000:
    harness.fail(f"the model has {count} parameters, fewer than a million")
flags = job.server_flags(30, "bsp")
globs = flags[flags.index("--param-group") + 1].rsplit(":", 1)[0].split("|")
by_server = {n for n, _ in module.named_parameters()
             if any(fnmatch.fnmatchcase(n, g) for g in globs)}
optimizer, _, _ = job.torch_recipe(module, 30)
names = {id(p): n for n, p in module.named_parameters()}
by_torch = {names[id(p)] for group in optimizer.param_groups if group["weight_decay"] == 0
            for p in group["params"]}
if not by_server or by_server != by_torch:
    harness.fail(f"no-decay tensors differ: server {sorted(by_server ^ by_torch)}")
print(f"{count} parameters, {len(by_server)} tensors without weight decay")

# Synchronous: the server's AdamW, 30 rounds.
server = train("bsp", ["--policy", "bsp", "--max-iterations", "30", "--eval-every", "15",
                       *flags], [], 90)
if "optimizer: adamw" not in server.log_text():
    harness.fail("the server did not say it steps with adamw")

# DiLoCo: AdamW in the workers, the outer Nesterov SGD on the server.
train("localsgd", ["--policy", "localsgd", "--local-steps", "4", "--max-iterations", "8",
                   "--eval-every", "4", *job.server_flags(8, "localsgd")], ["--local-adamw"], 90)
