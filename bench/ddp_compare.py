#!/usr/bin/python3
"""dmlps against PyTorch DistributedDataParallel on one job, in one run.

    PYTHONPATH=build/python bench/ddp_compare.py --repeat 5

The job: the MLP of the server's built-in mlp:128 (784-128-10, from
dmlps.torch.mlp, the same initial values everywhere: torch.manual_seed(--seed)),
Fashion-MNIST split into --workers contiguous shards (the slices dmlps-worker
takes), --batch samples a worker step, SGD with --lr and --momentum, and the
last worker --slowdown times slower. It is trained to --target test accuracy:

- DDP: --workers processes, torch.distributed with the gloo backend over
  loopback (tcp://127.0.0.1, a free port), DistributedDataParallel around the
  module, torch.optim.SGD (its momentum is the server's: v = mu v + g, then
  w -= lr v; DDP averages the gradients as BSP does). The slow rank's
  gradient leaves (K-1) t late, as a dmlps-worker's push does under
  --slowdown: t runs from the forward pass to the moment the backward pass
  hands DDP its last gradient bucket, and a comm hook sleeps (K-1) t there,
  before that bucket's all-reduce. Neither the all-reduce nor the wait for
  the other ranks counts as compute, as the wait for the server does not
  in dmlps. (Sleeping after the step instead would let the other ranks
  compute their next step during the sleep and the slow rank then compute
  alone: a straggler half as costly as the one dmlps's workers emulate.) Every
  --eval-every steps rank 0 sends a copy of the parameters, stamped with the
  training time, to an evaluator process that scores it on the test set
  while training goes on; the time to target is the stamp of the first copy
  at or above it, as dmlps-server stamps its snapshots. The clock starts
  when every rank has loaded its shard.
- dmlps: `dmlps-bench run` per policy (--policies) with --model external,
  PyTorch workers and evaluator (share/dmlps/examples/bench-torch: the same
  module and loss through dmlps.torch), the same batch, lr, momentum,
  straggler, seed and --eval-every (in iterations, which for BSP are steps;
  under localsgd:H and async-localsgd:H an iteration is a round of H local
  steps, so they evaluate every --eval-every/H rounds, rounded down, at
  least one).

With --job DIR the job is an example's instead (share/dmlps/examples/
torch-resnet, torch-charlm): DIR/job.py gives the module, the data, the
loss, the batch and the recipe, both as dmlps-server flags (server_flags:
the server's optimizer, groups, clipping and schedule over --steps steps;
for localsgd and async-localsgd the outer optimizer, the workers stepping
with the job's local_optimizer) and as plain PyTorch (torch_recipe: the
same torch.optim optimizer, scheduler and clipping, for DDP, stepped once a
step). DDP keeps its default buffer broadcast (rank 0's buffers to every
rank each forward); its snapshots carry parameters and buffers and are
scored in eval() mode, as dmlps's evaluator scores the server's. The target
is --target (test accuracy, over the last dimension of the outputs) or
--target-loss (mean test loss), both stamped as above.

Runs take turns (DDP, then each policy, for each repeat) so that drift in
the machine's speed hits all alike. Every process runs PyTorch and OpenBLAS
on one thread (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1, set here for the
children too). The table gives per configuration the runs that reached the
target, the median seconds to it (min and max), the median iterations, and
the median time over DDP's. The exit status is 1 when a run failed (a
process error, not a run that missed the target), 64 for bad flags.
"""

import argparse
import importlib.util
import json
import math
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # before torch loads BLAS, and for every child

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402

import dmlps  # noqa: E402
import dmlps.torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "share", "dmlps", "examples", "bench-torch")
# The policies whose workers take local steps (async-localsgd-dylu too).
LOCAL_SGD = ("localsgd", "async-localsgd")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """Bad flags: one line and exit 64 (EX_USAGE), as dmlps's commands do."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(64)


def parse_args(argv):
    parser = _Parser(
        description="time to accuracy of dmlps's policies against PyTorch DDP (gloo)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration")
    parser.add_argument("--target", type=float, default=0.85, help="target test accuracy")
    parser.add_argument("--policies", default="bsp,wbsp,lbbsp,asp,backup:1",
                        help="dmlps policies, as dmlps-bench run --policies takes them")
    parser.add_argument("--workers", type=int, default=4, help="workers (DDP: world size)")
    parser.add_argument("--slowdown", type=float, default=4.0,
                        help="slowdown factor of the last worker")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    parser.add_argument("--batch", type=int, default=256, help="samples per worker step")
    parser.add_argument("--eval-every", type=int, default=50,
                        help="steps between evaluations (dmlps: iterations; a local-SGD "
                        "round of H steps counts H)")
    parser.add_argument("--eval-samples", type=int, default=0,
                        help="score the first N test samples only, in DDP's evaluator and "
                        "(evaluator.py --samples N) in dmlps's; 0: all")
    parser.add_argument("--max-seconds", type=float, default=300,
                        help="training seconds after which a run gives up")
    parser.add_argument("--seed", type=int, default=1, help="seed of the initial model")
    parser.add_argument("--data", default="fashion-mnist")
    parser.add_argument("--job", help="an example's folder holding job.py (default: the MLP)")
    parser.add_argument("--steps", type=int,
                        help="--job: the steps the recipe's schedule spans (default: the job's "
                        "STEPS)")
    parser.add_argument("--target-loss", type=float,
                        help="target mean test loss instead of (or with --target, besides) "
                        "an accuracy")
    parser.add_argument("--bin", default=os.environ.get("DMLPS_BIN", ""),
                        help="folder of dmlps-bench (default: build/cmd, else PATH)")
    args = parser.parse_args(argv)
    problems = []
    if args.job is not None:
        try:
            args.job = load_job(args.job)
        except (OSError, ImportError, AttributeError, SyntaxError) as e:
            parser.error(f"--job: {e}")
        args.batch = args.job.module.BATCH if "--batch" not in argv else args.batch
        if args.steps is None:
            args.steps = getattr(args.job.module, "STEPS", 1000)
    if args.steps is not None and args.steps < 1:
        problems.append("--steps must be at least 1")
    if args.target_loss is not None:
        if not args.target_loss > 0:
            problems.append("--target-loss must be positive")
        if "--target" not in argv:
            args.target = None  # the loss alone
    if args.target is not None and not 0 < args.target <= 1:
        problems.append("--target must be in (0, 1]")
    if args.repeat < 1:
        problems.append("--repeat must be at least 1")
    if args.workers < 1:
        problems.append("--workers must be at least 1")
    if args.slowdown < 1:
        problems.append("--slowdown must be at least 1")
    if not args.lr > 0 or not 0 <= args.momentum < 1:
        problems.append("--lr must be positive and --momentum in [0, 1)")
    if args.eval_samples < 0:
        problems.append("--eval-samples must be at least 0")
    if args.batch < 1 or args.eval_every < 1 or not args.max_seconds > 0:
        problems.append("--batch, --eval-every and --max-seconds must be positive")
    args.policies = [p for p in args.policies.split(",") if p]
    if not args.policies:
        problems.append("--policies names no policy")
    if problems:
        parser.error("; ".join(problems))
    return args


class Job:
    """An example's job.py, loaded from its folder; a DDP process, spawned,
    loads it again from there."""

    def __init__(self, folder, module):
        self.folder = folder
        self.module = module
        self.name = module.NAME

    def __getstate__(self):
        return {"folder": self.folder}

    def __setstate__(self, state):
        self.__dict__.update(load_job(state["folder"]).__dict__)


def load_job(folder):
    path = os.path.join(folder, "job.py")
    spec = importlib.util.spec_from_file_location("dmlps_job", path)
    if spec is None:
        raise ImportError(f"no job.py in {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)  # job.py may import its neighbours
    spec.loader.exec_module(module)
    for name in ("NAME", "BATCH", "model", "train_data", "test_data", "loss_fn", "server_flags",
                 "torch_recipe"):
        getattr(module, name)
    return Job(os.path.abspath(folder), module)


def reached(args, accuracy, loss):
    """Whether an evaluation meets every target given."""
    return ((args.target is None or accuracy >= args.target) and
            (args.target_loss is None or loss <= args.target_loss))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- DDP ------------------------------------------------------------------


def _ddp_rank(rank, args, port, snapshots, stop):
    """One DDP process: trains its shard, the last rank slowed down."""
    torch.set_num_threads(1)
    world = args.workers
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    x, y = train_shard(args, rank, world)
    torch.manual_seed(args.seed)
    module = make_module(args)
    model = torch.nn.parallel.DistributedDataParallel(module)
    slowdown = args.slowdown if rank == world - 1 else 1.0
    # DDP reduces a bucket of gradients as soon as backward has filled it.
    # The last bucket marks the end of this rank's compute: a slow rank
    # sleeps there, so its gradient leaves late, as a straggler's would.
    began = [0.0]

    def slowed_allreduce(state, bucket):
        if slowdown > 1 and bucket.is_last():
            time.sleep((slowdown - 1) * (time.perf_counter() - began[0]))
        return default_hooks.allreduce_hook(state, bucket)

    model.register_comm_hook(None, slowed_allreduce)
    if args.job is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
        scheduler, clip = None, 0
        loss_fn = torch.nn.CrossEntropyLoss()
    else:
        optimizer, scheduler, clip = args.job.module.torch_recipe(module, args.steps)
        loss_fn = args.job.module.loss_fn()
    model.train()
    order = torch.Generator().manual_seed(args.seed * 1000 + rank)
    flag = torch.zeros(1)
    dist.barrier()  # every shard loaded: the clock starts
    start = time.monotonic()
    step = 0
    while True:
        perm = torch.randperm(len(x), generator=order)
        for first in range(0, len(x) - args.batch + 1, args.batch):
            ids = perm[first:first + args.batch]
            optimizer.zero_grad()
            began[0] = time.perf_counter()
            loss_fn(model(x[ids]), y[ids]).backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            step += 1
            if step % args.eval_every:
                continue
            if rank == 0:
                elapsed = time.monotonic() - start
                # Parameters and buffers, as rank 0 holds them.
                # NumPy copies: tensors would cross the queue as shared
                # memory that the rank may free before the evaluator reads it.
                state = {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
                snapshots.put((step, elapsed, state))
                flag[0] = 1.0 if stop.is_set() or elapsed >= args.max_seconds else 0.0
            dist.broadcast(flag, 0)  # every rank stops at the same step
            if flag[0]:
                if rank == 0:
                    snapshots.put(None)
                dist.destroy_process_group()
                return


def train_shard(args, rank, world):
    """This rank's contiguous shard of the training set, as dmlps-worker takes it."""
    if args.job is None:
        x, y = dmlps.load_train(args.data, rank, world)
        return torch.from_numpy(x), torch.from_numpy(y)
    x, y = args.job.module.train_data()
    base, extra = divmod(len(x), world)
    first = rank * base + min(rank, extra)
    count = base + (1 if rank < extra else 0)
    return x[first:first + count], y[first:first + count]


def make_module(args):
    return dmlps.torch.mlp(784, [128], 10) if args.job is None else args.job.module.model()


def score(module, loss_fn, x, y, batch=500):
    """(accuracy over the outputs' last dimension, mean loss) in eval() mode."""
    module.eval()
    correct = predicted = 0
    loss = 0.0
    with torch.no_grad():
        for first in range(0, len(x), batch):
            out = module(x[first:first + batch])
            target = y[first:first + batch]
            loss += float(loss_fn(out, target)) * len(target)
            correct += int((out.argmax(dim=-1) == target).sum())
            predicted += target.numel()
    return correct / max(predicted, 1), loss / len(x)


def _ddp_evaluator(args, snapshots, stop, results):
    """Scores rank 0's copies in order; the first that meets the target
    stops the ranks (at their next evaluation step)."""
    torch.set_num_threads(1)
    if args.job is None:
        x, y = dmlps.load_test(args.data)
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        loss_fn = torch.nn.CrossEntropyLoss()
    else:
        x, y = args.job.module.test_data()
        loss_fn = args.job.module.loss_fn()
    if args.eval_samples:
        x, y = x[:args.eval_samples], y[:args.eval_samples]
    module = make_module(args)
    hit = None
    last = (0, 0.0, 0.0, math.inf)
    ended = False
    while not ended:
        item = snapshots.get()
        if item is None:
            break
        # Behind, it scores the newest copy waiting and skips the older, as
        # dmlps-server skips snapshots its evaluation fell behind on; the
        # last one before the end is always scored.
        while True:
            try:
                newer = snapshots.get_nowait()
            except queue.Empty:
                break
            if newer is None:
                ended = True
                break
            item = newer
        step, elapsed, state = item
        module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        accuracy, loss = score(module, loss_fn, x, y)
        last = (step, elapsed, accuracy, loss)
        if hit is None and reached(args, accuracy, loss):
            hit = last
            stop.set()
    best = hit or last
    results.put({"reached": hit is not None, "seconds": best[1], "iterations": best[0],
                 "accuracy": best[2], "loss": best[3]})


def run_ddp(args):
    """One DDP run: {reached, seconds, iterations, accuracy} or {failure}."""
    context = mp.get_context("spawn")
    snapshots, results, stop = context.Queue(), context.Queue(), context.Event()
    port = free_port()
    procs = [context.Process(target=_ddp_rank, args=(r, args, port, snapshots, stop))
             for r in range(args.workers)]
    procs.append(context.Process(target=_ddp_evaluator, args=(args, snapshots, stop, results)))
    for p in procs:
        p.start()
    deadline = time.monotonic() + args.max_seconds + 120  # start-up and a lagging evaluator
    try:
        for p in procs[:-1]:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.exitcode != 0:
                raise RuntimeError("a DDP rank " + ("did not end in time" if p.exitcode is None
                                                    else f"exited with status {p.exitcode}"))
        try:
            result = results.get(timeout=max(1.0, deadline - time.monotonic()))
        except Exception:
            raise RuntimeError("the DDP evaluator gave no result in time")
        procs[-1].join(30)
        return result
    except RuntimeError as e:
        return {"failure": str(e)}
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()


# --- dmlps ----------------------------------------------------------------


def find_bench(args):
    for folder in (args.bin, os.path.join(HERE, "..", "build", "cmd")):
        if folder and os.access(os.path.join(folder, "dmlps-bench"), os.X_OK):
            return os.path.join(folder, "dmlps-bench")
    return "dmlps-bench"


def bench_command(args, bench, policies):
    """dmlps-bench run's command line for `policies` (one, with a job)."""
    slowdown = ",".join(["1"] * (args.workers - 1) + [f"{args.slowdown:g}"])
    example = EXAMPLE if args.job is None else args.job.folder
    worker = f"{sys.executable} '{os.path.join(example, 'worker.py')}'"
    command = [
        bench, "run", "--workers", str(args.workers), "--policies", ",".join(policies),
        "--slowdown", slowdown, "--model", "external", "--data", args.data,
        "--batch", str(args.batch), "--eval-every", str(eval_iterations(args, policies)),
        "--max-seconds", str(args.max_seconds), "--seed", str(args.seed), "--repeat", "1",
        "--format", "json", "--quiet",
        "--evaluator-command", f"{sys.executable} '{os.path.join(example, 'evaluator.py')}'"
        + (f" --samples {args.eval_samples}" if args.eval_samples else "")]
    command += ["--target", str(args.target if args.target is not None else 0)]
    if args.target_loss is not None:
        command += ["--target-loss", str(args.target_loss)]
    if args.job is None:
        command += ["--lr", str(args.lr), "--momentum", str(args.momentum)]
    else:
        policy = policies[0].split(":")[0]
        flags = call_server_flags(args.job.module, args.steps, policy)
        # The flags dmlps-bench gives every server itself go to it instead.
        for flag in ("--lr", "--momentum"):
            if flag in flags:
                at = flags.index(flag)
                command += [flag, flags[at + 1]]
                del flags[at:at + 2]
        if "--local-steps" in flags:
            at = flags.index("--local-steps")
            command[command.index("--policies") + 1] = f"{policy}:{flags[at + 1]}"
            del flags[at:at + 2]
        command += ["--server-args", " ".join(flags)]
        if policy.startswith(LOCAL_SGD) and hasattr(args.job.module, "local_optimizer"):
            worker += " --local-adamw"
    return command + ["--worker-command", worker]


def local_steps(policy):
    """H of a local-SGD policy as dmlps-bench names it (localsgd:8 is 8,
    plain localsgd the server's default 8, localsgd:1 is 1); 1 for any
    other policy."""
    name, _, h = policy.partition(":")
    if not name.startswith(LOCAL_SGD):
        return 1
    return int(h) if h.isdigit() and int(h) > 0 else 8


def eval_iterations(args, policies):
    """--eval-every in the policy's iterations: at most DDP's worker steps
    between evaluations, a round of H local steps counting H (at least one
    round)."""
    h = max(local_steps(p) for p in policies)
    return max(1, args.eval_every // h)


def call_server_flags(job, steps, policy):
    """job.server_flags(steps[, policy]): the policy when it takes one."""
    try:
        return job.server_flags(steps, policy)
    except TypeError:
        return job.server_flags(steps)


def run_dmlps(args, bench, log):
    """One run of every policy through dmlps-bench: {policy: run's dict}.
    With a job, one dmlps-bench per policy, each with that policy's recipe;
    without, one per number of local steps, each its own --eval-every."""
    if args.job is None:
        groups = {}
        for policy in args.policies:
            groups.setdefault(local_steps(policy), []).append(policy)
        batches = list(groups.values())
    else:
        batches = [[policy] for policy in args.policies]
    out = {}
    for policies in batches:
        out.update(run_bench(args, bench_command(args, bench, policies), policies, log))
    return out


def run_bench(args, command, policies, log):
    limit = (args.max_seconds + 120) * len(policies)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        return {p: {"failure": f"dmlps-bench did not end within {limit:g} s"}
                for p in policies}
    except OSError as e:
        return {p: {"failure": f"cannot run {command[0]}: {e}"} for p in policies}
    try:
        runs = json.loads(done.stdout)["runs"]
    except (ValueError, KeyError):
        return {p: {"failure": f"dmlps-bench exited {done.returncode} without a table"}
                for p in policies}
    out = {}
    for run in runs:
        if run.get("failure"):
            out[run["policy"]] = {"failure": run["failure"]}
        else:
            out[run["policy"]] = {k: run.get(k) for k in ("reached", "seconds", "iterations",
                                                          "accuracy", "loss")}
    return out


# --- the table --------------------------------------------------------------


def summarize(name, runs):
    ok = [r for r in runs if "failure" not in r]
    hit = [r for r in ok if r["reached"]]
    row = {"config": name, "runs": len(runs), "failed": len(runs) - len(ok),
           "reached": len(hit), "median": None, "min": None, "max": None, "iterations": None}
    if hit:
        seconds = [r["seconds"] for r in hit]
        row.update(median=statistics.median(seconds), min=min(seconds), max=max(seconds),
                   iterations=statistics.median(r["iterations"] for r in hit))
    return row


def print_table(args, rows):
    if args.job is None:
        job = f"mlp:128 (PyTorch), {args.data}, lr {args.lr:g}, momentum {args.momentum:g}"
    else:
        job = f"{args.job.name} ({args.job.folder}, its recipe over {args.steps} steps)"
    targets = []
    if args.target is not None:
        targets.append(f"target {args.target:g}")
    if args.target_loss is not None:
        targets.append(f"target loss {args.target_loss:g}")
    print(f"{args.workers} workers, {job}, batch {args.batch}, last worker slowdown "
          f"{args.slowdown:g}, {', '.join(targets)}, eval every {args.eval_every}, "
          f"{args.repeat} runs each")
    ddp = rows[0]["median"]
    header = ["config", "reached", "seconds to target", "iterations", "time vs DDP"]
    cells = []
    for row in rows:
        if row["median"] is None:
            seconds, iterations, ratio = "-", "-", "-"
        else:
            seconds = f"{row['median']:.2f} ({row['min']:.2f}-{row['max']:.2f})"
            iterations = f"{row['iterations']:.0f}"
            ratio = f"{row['median'] / ddp:.2f}x" if ddp else "-"
        reached = f"{row['reached']}/{row['runs']}"
        if row["failed"]:
            reached += f" ({row['failed']} failed)"
        cells.append([row["config"], reached, seconds, iterations, ratio])
    widths = [max(len(line[c]) for line in [header] + cells) for c in range(len(header))]
    for line in [header] + cells:
        print("  ".join([line[0].ljust(widths[0])] +
                        [cell.rjust(w) for cell, w in zip(line[1:], widths[1:])]))


def main(argv):
    args = parse_args(argv)
    bench = find_bench(args)
    results = {name: [] for name in ["ddp"] + args.policies}
    with tempfile.TemporaryDirectory(prefix="dmlps-ddp-compare.") as work:
        log_path = os.path.join(work, "dmlps-bench.log")
        for repeat in range(1, args.repeat + 1):
            result = run_ddp(args)
            results["ddp"].append(result)
            print(f"run {repeat}/{args.repeat} ddp: {describe(result)}", file=sys.stderr,
                  flush=True)
            with open(log_path, "w") as log:
                by_policy = run_dmlps(args, bench, log)
            for policy in args.policies:
                result = by_policy.get(policy, {"failure": "dmlps-bench reported no run"})
                results[policy].append(result)
                print(f"run {repeat}/{args.repeat} {policy}: {describe(result)}",
                      file=sys.stderr, flush=True)
            if any("failure" in r for r in by_policy.values()):
                with open(log_path) as log:
                    sys.stderr.writelines(log.readlines()[-10:])
    rows = [summarize(name, runs) for name, runs in results.items()]
    rows[0]["config"] = "ddp (gloo)"
    print_table(args, rows)
    return 1 if any(row["failed"] for row in rows) else 0


def describe(result):
    if "failure" in result:
        return f"FAILED: {result['failure']}"
    what = "reached" if result["reached"] else "did not reach"
    loss = f", loss {result['loss']:.4f}" if result.get("loss") is not None else ""
    return (f"{what} the target: {result['seconds']:.2f} s, {result['iterations']} iterations, "
            f"accuracy {result['accuracy']:.4f}{loss}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
