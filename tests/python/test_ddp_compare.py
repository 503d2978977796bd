"""bench/ddp_compare.py runs the same job under PyTorch DDP (gloo, a
straggler rank) and under dmlps-bench, and prints one row per configuration
with its time to the target and its ratio to DDP's; bad flags exit 64."""

import os
import subprocess
import sys

import harness

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "bench", "ddp_compare.py")


def run(*args, seconds):
    try:
        return subprocess.run([sys.executable, script, "--bin", harness.BIN, *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=seconds)
    except subprocess.TimeoutExpired:
        harness.fail(f"ddp_compare.py {' '.join(args)} still running after {seconds} s")


bad = run("--workers", "0", seconds=60)
if bad.returncode != 64 or "--workers must be at least 1" not in bad.stderr:
    harness.fail(f"--workers 0: exit {bad.returncode}: {bad.stderr!r}")

bad = run("--eval-samples", "-1", seconds=60)
if bad.returncode != 64 or "--eval-samples must be at least 0" not in bad.stderr:
    harness.fail(f"--eval-samples -1: exit {bad.returncode}: {bad.stderr!r}")

# Local-SGD policies are evaluated every --eval-every/H rounds (H steps a
# round), rounded down, at least one; the others every --eval-every.
sys.path.insert(0, os.path.dirname(script))
import ddp_compare  # noqa: E402

for policy, h in (("localsgd:4", 4), ("async-localsgd", 8), ("async-localsgd-dylu:16", 16),
                  ("bsp", 1), ("backup:1", 1), ("ssp:3", 1)):
    if ddp_compare.local_steps(policy) != h:
        harness.fail(f"local_steps({policy!r}) is {ddp_compare.local_steps(policy)}, not {h}")
for every, policies, iterations in ((20, ["localsgd:8"], 2), (10, ["async-localsgd:8"], 1),
                                    (5, ["localsgd:8"], 1), (50, ["bsp"], 50)):
    args = ddp_compare.parse_args(["--eval-every", str(every)])
    if ddp_compare.eval_iterations(args, policies) != iterations:
        harness.fail(f"--eval-every {every} under {policies}: "
                     f"{ddp_compare.eval_iterations(args, policies)} iterations, not {iterations}")

done = run("--workers", "2", "--target", "0.5", "--repeat", "1", "--policies", "bsp",
           "--eval-every", "10", "--max-seconds", "30", seconds=240)
if done.returncode != 0:
    harness.fail(f"exit {done.returncode}: {done.stdout}{done.stderr[-3000:]}")
lines = done.stdout.splitlines()
if not lines or not lines[0].startswith("2 workers, mlp:128 (PyTorch)") or \
        "slowdown 4, target 0.5" not in lines[0]:
    harness.fail(f"no title line: {done.stdout}")
rows = {line.split()[0]: line.split() for line in lines[2:]}
if set(rows) != {"ddp", "bsp"}:
    harness.fail(f"not one row for DDP and one for bsp: {done.stdout}")
# ddp (gloo) 1/1 SECONDS (MIN-MAX) ITERATIONS 1.00x; bsp 1/1 SECONDS (MIN-MAX) ITERATIONS RATIO
if rows["ddp"][2] != "1/1" or rows["ddp"][-1] != "1.00x" or rows["bsp"][1] != "1/1":
    harness.fail(f"a configuration did not reach 0.5: {done.stdout}")
ddp_seconds, bsp_seconds = float(rows["ddp"][3]), float(rows["bsp"][2])
ratio = float(rows["bsp"][-1].rstrip("x"))
# The times are printed to 0.01 s and the ratio to 0.01: the ratio of the
# unrounded times lies within what those roundings allow.
low = max(bsp_seconds - 0.005, 0) / (ddp_seconds + 0.005) - 0.005
high = (bsp_seconds + 0.005) / max(ddp_seconds - 0.005, 1e-9) + 0.005
if not 0 < ddp_seconds < 30 or not low <= ratio <= high:
    harness.fail(f"the ratio to DDP does not follow from the times: {done.stdout}")
print(done.stdout)
