"""The server's optimizer steps as torch.optim does (docs/optimizers.md): one
worker feeds dmlps-server (an external model under BSP) the gradient of a
fixed function of the parameters, and the same function drives torch.optim
with the same rule, parameter groups, clipping and schedule. After 100 steps
the parameters agree to a relative error of 1e-6, on one server, on two
server shards, and across a checkpoint and resume."""

import math
import os
import subprocess
import time

import harness
import numpy as np
import torch

import dmlps

STEPS = 100
BATCH = 64  # a power of two: the server's mean of one push is the push, bit for bit
LAYOUT = [("fc.weight", (12, 8)), ("fc.bias", (12,)), ("norm.weight", (12,)),
          ("head.weight", (4, 12))]
SIZES = [int(np.prod(shape)) for _, shape in LAYOUT]
NUM_PARAMS = sum(SIZES)
rng = np.random.default_rng(11)
INITIAL = rng.normal(0, 0.5, NUM_PARAMS).astype(np.float32)
TARGET = rng.normal(0, 1.0, NUM_PARAMS).astype(np.float32)
CURVATURE = rng.uniform(0.2, 3.0, NUM_PARAMS).astype(np.float32)


def gradient(theta):
    """A gradient that depends on the parameters only, large enough at first
    for clipping to bite, with a ripple so that no rule is exact by luck."""
    theta = np.asarray(theta, dtype=np.float32)
    return (CURVATURE * (theta - TARGET) + np.float32(0.3) * np.sin(np.float32(7) * theta)).astype(
        np.float32)


def factor(kind, step):
    """The schedules of docs/optimizers.md, for torch's LambdaLR."""
    name, warmup = kind
    if step < warmup:
        return (step + 1) / warmup
    t = step - warmup
    if name == "constant":
        return 1.0
    if name == "cosine:60:0.1":
        return 0.1 + 0.9 * (1 + math.cos(math.pi * min(t, 60) / 60)) / 2
    if name == "linear:50:0.2":
        return 1 + (0.2 - 1) * min(t, 50) / 50
    raise ValueError(name)


class Case:
    def __init__(self, name, flags, make, schedule=("constant", 0), native=None, clip=0.0,
                 decay_groups=False):
        self.name = name
        self.flags = flags
        self.make = make  # param groups -> torch optimizer
        self.schedule = schedule
        self.native = native  # optimizer -> a torch scheduler of its own, or None
        self.clip = clip
        self.decay_groups = decay_groups

    def server_flags(self):
        flags = list(self.flags)
        if self.decay_groups:
            flags += ["--param-group", "*.bias|norm.*:weight_decay=0;head.*:lr=0.02"]
        if self.clip:
            flags += ["--clip-grad-norm", str(self.clip)]
        return flags


def reference(case, steps=STEPS):
    """torch.optim's parameters after ``steps`` steps of ``case``."""
    tensors = []
    offset = 0
    for (name, _), n in zip(LAYOUT, SIZES):
        tensors.append((name, torch.tensor(INITIAL[offset:offset + n]).requires_grad_()))
        offset += n
    if case.decay_groups:
        groups = [{"params": [t for n, t in tensors if n == "fc.weight"]},
                  {"params": [t for n, t in tensors if n in ("fc.bias", "norm.weight")],
                   "weight_decay": 0.0},
                  {"params": [t for n, t in tensors if n == "head.weight"], "lr": 0.02}]
    else:
        groups = [{"params": [t for _, t in tensors]}]
    optimizer = case.make(groups)
    if case.native is not None:
        scheduler = case.native(optimizer)
    else:
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer,
                                                      lambda s: factor(case.schedule, s))
    params = [t for _, t in tensors]
    for _ in range(steps):
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
            g = gradient(flat)
            offset = 0
            for p in params:
                p.grad = torch.from_numpy(g[offset:offset + p.numel()].copy()).reshape(p.shape)
                offset += p.numel()
        if case.clip:
            torch.nn.utils.clip_grad_norm_(params, case.clip)
        optimizer.step()
        scheduler.step()
    return torch.cat([p.detach().reshape(-1) for p in params]).numpy()


def make_worker(endpoint):
    def compute(params, sample_ids, grad):
        grad[:] = gradient(params) * np.float32(1)
        return 0.0

    return dmlps.Worker(endpoint, BATCH * 4, compute, num_params=NUM_PARAMS, layout=LAYOUT,
                        initial_values=INITIAL)


def start_shard(index, count, coordinator, save, extra):
    log = open(os.path.join(harness.WORK, f"shard-{index}.log"), "w")
    process = subprocess.Popen(
        [os.path.join(harness.BIN, "dmlps-server"), "--bind", "tcp://127.0.0.1:*", "--shard",
         f"{index}/{count}", "--coordinator", coordinator, "--save-model", save, *extra],
        stdout=subprocess.DEVNULL, stderr=log)
    harness._children.append(process)
    return process


def run_server(case, tag, steps=STEPS, shards=1, extra=()):
    """The parameters dmlps-server holds after ``steps`` steps of ``case``."""
    saves = [os.path.join(harness.WORK, f"{tag}.{k}") for k in range(shards)]
    shard_flags = ["--shard", f"0/{shards}"] if shards > 1 else []
    server = harness.Server("--workers", "1", "--model", "external", "--policy", "bsp",
                            "--batch", str(BATCH), "--max-iterations", str(steps),
                            "--save-model", saves[0], *shard_flags, *case.server_flags(),
                            *extra, name=tag)
    others = [start_shard(k, shards, server.endpoint, saves[k], []) for k in range(1, shards)]
    harness.run_workers([make_worker(server.endpoint)], 120)
    if server.wait(60) != 0:
        harness.fail(f"{tag}: dmlps-server failed")
    for other in others:
        try:
            if other.wait(timeout=30) != 0:
                harness.fail(f"{tag}: a server shard failed")
        except subprocess.TimeoutExpired:
            harness.fail(f"{tag}: a server shard still running after 30 s")
    return np.concatenate([np.fromfile(path, dtype="<f4") for path in saves]), server


def check(tag, got, want):
    error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    moved = float(np.linalg.norm(want - INITIAL) / np.linalg.norm(INITIAL))
    print(f"{tag}: relative error {error:.2e} (the model moved {moved:.2f} of its norm)")
    if got.shape != want.shape:
        harness.fail(f"{tag}: {got.shape} parameters, torch.optim has {want.shape}")
    if not error <= 1e-6:
        harness.fail(f"{tag}: the server's parameters differ from torch.optim's by {error:.3g}")
    if moved < 0.05:
        harness.fail(f"{tag}: the model hardly moved; the comparison would prove nothing")


SGD = Case("sgd-nesterov-wd", ["--momentum", "0.9", "--nesterov", "--weight-decay", "0.01",
                               "--lr", "0.01"],
           lambda g: torch.optim.SGD(g, lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.01),
           decay_groups=True)
CASES = [
    SGD,
    Case("sgd-dampening-step", ["--momentum", "0.8", "--dampening", "0.3", "--weight-decay",
                                "0.001", "--lr", "0.02", "--lr-schedule", "step:30:0.5"],
         lambda g: torch.optim.SGD(g, lr=0.02, momentum=0.8, dampening=0.3, weight_decay=0.001),
         native=lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=30, gamma=0.5)),
    Case("adamw-cosine-warmup-clip", ["--optimizer", "adamw", "--lr", "0.01", "--betas",
                                      "0.9,0.99", "--eps", "1e-7", "--weight-decay", "0.05",
                                      "--lr-schedule", "cosine:60:0.1", "--warmup", "10"],
         lambda g: torch.optim.AdamW(g, lr=0.01, betas=(0.9, 0.99), eps=1e-7, weight_decay=0.05),
         schedule=("cosine:60:0.1", 10), clip=2.0, decay_groups=True),
    Case("adam-multistep", ["--optimizer", "adam", "--lr", "0.03", "--weight-decay", "0.01",
                            "--lr-schedule", "multistep:40,70:0.3"],
         lambda g: torch.optim.Adam(g, lr=0.03, weight_decay=0.01),
         native=lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[40, 70], gamma=0.3)),
    Case("adamw-cosine-native", ["--optimizer", "adamw", "--lr", "0.02", "--lr-schedule",
                                 "cosine:100:0"],
         lambda g: torch.optim.AdamW(g, lr=0.02),
         native=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=100)),
    Case("sgd-linear-warmup-clip", ["--momentum", "0.9", "--lr", "0.05", "--lr-schedule",
                                    "linear:50:0.2", "--warmup", "5"],
         lambda g: torch.optim.SGD(g, lr=0.05, momentum=0.9),
         schedule=("linear:50:0.2", 5), clip=1.0),
]

for case in CASES:
    want = reference(case)
    got, _ = run_server(case, case.name)
    check(case.name, got, want)

# Two server shards step their slices with the same rules and groups, and
# clip by the norm over both slices.
for case in (SGD, CASES[3], CASES[2]):
    want = reference(case)
    got, _ = run_server(case, case.name + "-2shards", shards=2)
    check(case.name + " on 2 shards", got, want)

# Across a resume: the moments, the momentum and the schedule's position are
# in the checkpoint, so 50 steps, a restart, and 50 more are 100 steps.
for case in (CASES[1], CASES[2]):
    checkpoint = os.path.join(harness.WORK, case.name + ".ckpt")
    run_server(case, case.name + "-first", steps=50,
               extra=["--checkpoint", checkpoint, "--checkpoint-every", "50"])
    got, server = run_server(case, case.name + "-resumed", extra=["--resume", checkpoint])
    if "resuming from" not in server.log_text():
        harness.fail(f"{case.name}: the second run did not resume")
    check(case.name + " across a resume", got, reference(case))

print(f"ok: {len(CASES)} rules and schedules match torch.optim after {STEPS} steps, "
      "on 1 and 2 shards and across a resume")
