"""What a Python caller sees of dmlps.Worker and dmlps.Evaluator before
anything runs: help() lists every argument with its type, default and
description; the defaults are dmlps-worker's; the typed stubs installed
beside the compiled module say the same; an unknown keyword or a wrong
type is a TypeError that names it; a bad value an InvalidArgumentError."""

import ast
import inspect
import os
import pydoc
import re
import subprocess
import sys

import harness  # noqa: F401  (skips without the module, NumPy or PyTorch)

import dmlps
import dmlps._dmlps

CLASSES = (dmlps.Worker, dmlps.Evaluator)


def documented(cls):
    """{name: (type, default text or None, description)} of the class's
    docstring's Parameters section."""
    section = cls.__doc__.split("Parameters\n----------\n", 1)[1].split("\n\n", 1)[0]
    entries = {}
    for match in re.finditer(r"^(\w+) : (.+)\n((?:    .*\n?)+)", section, re.M):
        name, head, body = match.groups()
        kind, _, default = head.rpartition(", default ")
        if not kind:
            kind, default = head, None
        entries[name] = (kind, default, " ".join(body.split()))
    return entries


def check_help():
    for cls in CLASSES:
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        signature = inspect.signature(cls)
        if f"{cls.__name__}{signature}" not in text:
            harness.fail(f"help({cls.__name__}) does not show its signature:\n{text[:600]}")
        entries = documented(cls)
        if list(entries) != list(signature.parameters):
            harness.fail(f"{cls.__name__}'s docstring describes {list(entries)}, its signature "
                         f"has {list(signature.parameters)}")
        for name, parameter in signature.parameters.items():
            kind, default, description = entries[name]
            if len(description.split()) < 4:
                harness.fail(f"{cls.__name__}({name}) is barely described: {description!r}")
            if parameter.default is inspect.Parameter.empty:
                if default is not None:
                    harness.fail(f"{cls.__name__}({name}) is required, documented with a default")
            elif default != repr(parameter.default):
                harness.fail(f"{cls.__name__}({name}): default {parameter.default!r}, "
                             f"documented {default}")
            if f"{name} : {kind}" not in text:
                harness.fail(f"help({cls.__name__}) lacks '{name} : {kind}'")
    options = [p for p in inspect.signature(dmlps.Worker).parameters.values()
               if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if len(options) < 19:
        harness.fail(f"dmlps.Worker has only {len(options)} keyword options")
    print(f"help() shows {len(inspect.signature(dmlps.Worker).parameters)} arguments of "
          f"Worker and {len(inspect.signature(dmlps.Evaluator).parameters)} of Evaluator")


# The options that are dmlps-worker's flags, and the factor from the flag's
# unit to the option's (seconds to milliseconds).
CLI_FLAGS = {"connect_timeout_ms": ("connect-timeout", 1000),
             "server_timeout_ms": ("server-timeout", 1000),
             "reconnect_timeout_ms": ("reconnect-timeout", 1000),
             "heartbeat_ms": ("heartbeat-ms", 1), "threads": ("threads", 1),
             "max_batch": ("max-batch", 1), "slowdown": ("slowdown", 1),
             "delay_ms": ("delay-ms", 1), "delay_prob": ("delay-prob", 1),
             "round_robin_ms": ("round-robin-ms", 1), "bandwidth_mbps": ("bandwidth-mbps", 1)}


def check_cli_defaults():
    text = subprocess.run([os.path.join(harness.BIN, "dmlps-worker"), "--help"],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    defaults = {}
    for entry in re.split(r"\n(?=\s{2,8}--[a-z])", text):
        flag = re.match(r"\s*--([a-z-]+)", entry)
        default = re.search(r"\(default: ([^)]*)\)\s*$", " ".join(entry.split()))
        if flag and default:
            defaults[flag.group(1)] = default.group(1)
    signature = inspect.signature(dmlps.Worker).parameters
    for option, (flag, factor) in CLI_FLAGS.items():
        if flag not in defaults:
            harness.fail(f"dmlps-worker --help gives no default for --{flag}")
        if float(defaults[flag]) * factor != signature[option].default:
            harness.fail(f"{option}={signature[option].default}, but dmlps-worker's "
                         f"--{flag} defaults to {defaults[flag]}")
    for name in ("rank", "seed", "secret", "curve_secret", "trace", "slowdown_schedule"):
        if signature[name].default not in (-1, 0, None):
            harness.fail(f"{name} defaults to {signature[name].default!r}")
    print(f"{len(CLI_FLAGS)} options default as dmlps-worker's flags do")


def check_stubs():
    folder = os.path.dirname(dmlps._dmlps.__file__)
    if not os.path.exists(os.path.join(folder, "py.typed")):
        harness.fail(f"no py.typed beside {dmlps._dmlps.__file__}")
    with open(os.path.join(folder, "_dmlps.pyi")) as f:
        stub = ast.parse(f.read())
    classes = {node.name: node for node in stub.body if isinstance(node, ast.ClassDef)}
    for cls in CLASSES:
        init = next(n for n in classes[cls.__name__].body
                    if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        args = init.args
        positional = args.args[1:]  # after self
        stubbed = [(a.arg, "positional", a.annotation) for a in positional]
        stubbed += [(a.arg, "keyword", a.annotation) for a in args.kwonlyargs]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        defaults += args.kw_defaults
        runtime = inspect.signature(cls).parameters
        entries = documented(cls)
        if [s[0] for s in stubbed] != list(runtime):
            harness.fail(f"_dmlps.pyi's {cls.__name__} takes {[s[0] for s in stubbed]}, the "
                         f"module {list(runtime)}")
        for (name, place, annotation), default in zip(stubbed, defaults):
            parameter = runtime[name]
            keyword = parameter.kind is inspect.Parameter.KEYWORD_ONLY
            if keyword != (place == "keyword"):
                harness.fail(f"_dmlps.pyi: {cls.__name__}({name}) is {place}")
            want = None if parameter.default is inspect.Parameter.empty else parameter.default
            got = None if default is None else ast.literal_eval(default)
            if got != want or type(got) is not type(want):
                harness.fail(f"_dmlps.pyi: {cls.__name__}({name}) defaults to {got!r}, the "
                             f"module's to {want!r}")
            if ast.unparse(annotation) != entries[name][0]:
                harness.fail(f"_dmlps.pyi: {cls.__name__}({name}: {ast.unparse(annotation)}), "
                             f"documented as {entries[name][0]}")
    for name, node in classes.items():
        if name in ("Worker", "Evaluator"):
            continue
        runtime = getattr(dmlps, name)
        if [ast.unparse(b) for b in node.bases] != [b.__name__ for b in runtime.__bases__]:
            harness.fail(f"_dmlps.pyi: {name}'s bases differ from {runtime.__bases__}")
    errors = [n for n in dir(dmlps._dmlps) if n.endswith("Error")]
    if sorted(errors) != sorted(n for n in classes if n.endswith("Error")):
        harness.fail(f"the module's errors {errors} are not the stub's")
    print(f"_dmlps.pyi and py.typed sit beside the module; its {len(classes)} classes match")


def raises(expected, call, *words):
    """The exception call() raises, checked to be `expected` and to name
    each of `words`."""
    try:
        call()
    except expected as e:
        for word in words:
            if word not in str(e):
                harness.fail(f"{type(e).__name__}: {e} does not say {word!r}")
        return e
    except BaseException as e:  # noqa: B902 (kept for the message)
        harness.fail(f"expected {expected.__name__}, got {type(e).__name__}: {e}")
    harness.fail(f"expected {expected.__name__}, nothing was raised")


def compute(params, sample_ids, grad):
    grad[:] = 0
    return 0.0


def check_argument_errors():
    server = harness.unused_endpoint()
    raises(TypeError, lambda: dmlps.Worker(server, 10, compute, rnak=1),
           "Worker() got an unexpected keyword argument 'rnak'", "did you mean 'rank'?")
    raises(TypeError, lambda: dmlps.Evaluator(server, compute, slowdown=2),
           "Evaluator() got an unexpected keyword argument 'slowdown'")
    raises(TypeError, lambda: dmlps.Worker(server, 10), "Worker()", "compute")
    raises(TypeError, lambda: dmlps.Worker(server, 10, compute, rank="1"),
           "rank must be an int, not str")
    raises(TypeError, lambda: dmlps.Worker(server, 10, compute, slowdown="2"),
           "slowdown must be a number, not str")
    raises(TypeError, lambda: dmlps.Worker(server, 10, 5), "compute must be callable, not int")
    raises(TypeError, lambda: dmlps.Worker(server, 10, compute, trace=3), "trace must be a str")
    bad = raises(dmlps.InvalidArgumentError, lambda: dmlps.Worker(server, 10, compute, threads=0),
                 "--threads must be in [1, 1024]")
    if not isinstance(bad, ValueError):
        harness.fail("InvalidArgumentError is not a ValueError")
    raises(dmlps.InvalidArgumentError,
           lambda: dmlps.Worker(server, 10, compute, slowdown_schedule="0:1,0:2"),
           "slowdown_schedule: ")
    raises(dmlps.InvalidArgumentError, lambda: dmlps.load_train("fashion-mnist", 3, 2),
           "no such shard")
    # Path-like and NumPy values are taken where a str or an int is.
    import pathlib

    import numpy as np
    dmlps.Worker(server, np.int64(10), compute, rank=np.int32(1), slowdown=np.float32(2),
                 trace=pathlib.Path(harness.WORK) / "w.trace", slowdown_schedule=None)
    print("unknown keywords and wrong types are TypeErrors naming them; bad values "
          "InvalidArgumentErrors")


check_help()
check_cli_defaults()
check_stubs()
check_argument_errors()
sys.exit(0)
