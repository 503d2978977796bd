"""The ResNet example (share/dmlps/examples/torch-resnet) runs as its README
gives it: a dmlps-server --model external --evaluator with the job's AdamW
recipe (job.server_flags), two worker.py processes and evaluator.py, for 60
synchronous steps. Every process exits 0, the server steps with AdamW, the
first worker announces the module's BatchNorm state, the test loss
falls, and the accuracy the server's evaluator reported at the end is that
of the final parameters and buffers (--save-model) loaded into a fresh
module scored in eval() mode, within 0.002. The recipe's two forms agree: job.torch_recipe's AdamW and the
server's --param-group glob exempt the same parameters from weight decay,
the BatchNorm weights and every bias."""

import fnmatch
import os
import re
import sys

import harness
import numpy
import torch

import dmlps.torch

example = os.path.join(harness.EXAMPLES, "torch-resnet")
sys.path.insert(0, example)
import job  # noqa: E402

STEPS = 60


def no_decay_by_flags(module):
    """The names of the parameters the server's --param-group puts at
    weight_decay=0."""
    flags = job.server_flags(STEPS)
    spec = flags[flags.index("--param-group") + 1]
    patterns, _, options = spec.partition(":")
    if options != "weight_decay=0":
        harness.fail(f"the param group is not a no-decay one: {spec}")
    return {name for name, _ in module.named_parameters()
            if any(fnmatch.fnmatchcase(name, p) for p in patterns.split("|"))}


def no_decay_by_torch(module):
    """The names of the parameters torch_recipe's AdamW puts at
    weight_decay=0."""
    optimizer, _, _ = job.torch_recipe(module, STEPS)
    names = {id(p): name for name, p in module.named_parameters()}
    return {names[id(p)] for group in optimizer.param_groups if group["weight_decay"] == 0
            for p in group["params"]}


def check_recipe():
    torch.manual_seed(0)
    module = job.model()
    expected = {f"{prefix}.{name}" if prefix else name
                for prefix, m in module.named_modules()
                for name, _ in m.named_parameters(recurse=False)
                if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) or name == "bias"}
    by_flags, by_torch = no_decay_by_flags(module), no_decay_by_torch(module)
    if by_flags != expected or by_torch != expected:
        harness.fail(f"no-decay groups differ: flags {sorted(by_flags ^ expected)}, "
                     f"torch_recipe {sorted(by_torch ^ expected)} against the norms and biases")
    params = sum(p.numel() for p in module.parameters())
    if params < 200000:
        harness.fail(f"the model has {params} parameters, fewer than 200,000")
    return module


def main():
    module = check_recipe()
    state_floats = sum(b.numel() for b in module.buffers())
    saved = os.path.join(harness.WORK, "final.model")
    server = harness.Server("--model", "external", "--evaluator", "--workers", "2",
                            "--save-model", saved,
                            "--policy", "bsp", "--batch", str(job.BATCH),
                            "--max-iterations", str(STEPS), "--eval-every", "30",
                            *job.server_flags(STEPS))
    worker_py = os.path.join(example, "worker.py")
    python = "/usr/bin/python3"
    children = [harness.start_script([worker_py, server.endpoint], "worker-0", python),
                harness.start_script([worker_py, server.endpoint], "worker-1", python),
                harness.start_script([os.path.join(example, "evaluator.py"), server.endpoint],
                                     "evaluator", python)]
    if server.wait(120) != 0:
        harness.fail("dmlps-server failed")
    harness.finish_scripts(children)

    log = server.log_text()
    if "optimizer: adamw" not in log:
        harness.fail("the server did not log 'optimizer: adamw'")
    announced = re.search(r"and (\d+) floats of module state", log)
    if not announced or int(announced.group(1)) != state_floats:
        harness.fail(f"the first worker did not announce the {state_floats} floats of "
                     "BatchNorm state")
    with open(server.tsv) as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    if len(rows) < 2 or not float(rows[-1][3]) < float(rows[0][3]):
        harness.fail(f"the test loss did not fall: {rows}")
    fresh = job.model()
    dmlps.torch.load_model(fresh, numpy.fromfile(saved, dtype="<f4"))
    x, y = job.test_data()
    fresh.eval()
    with torch.no_grad():
        accuracy = sum(int((fresh(x[i:i + 1000]).argmax(dim=1) == y[i:i + 1000]).sum())
                       for i in range(0, len(x), 1000)) / len(x)
    if abs(accuracy - float(rows[-1][2])) > 0.002:
        harness.fail(f"the evaluator reported {rows[-1][2]}, the saved model in a fresh "
                     f"module scores {accuracy:.4f}")
    print(f"resnet: {STEPS} steps, test loss {rows[0][3]} -> {rows[-1][3]}, "
          f"accuracy {rows[-1][2]}; the saved model in a fresh module {accuracy:.4f}")


main()
