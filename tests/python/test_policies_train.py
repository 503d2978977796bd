"""Every policy trains PyTorch workers: for each, a server with 2 workers,
the second a straggler at --slowdown 4, trains mlp:128 to a modest 0.70
test accuracy within 1500 iterations."""

import time

import harness

POLICIES = {
    "bsp": [],
    "asp": [],
    "ssp": ["--staleness", "3"],
    "backup": ["--backup", "1"],
    "wbsp": [],
    "wbsp-overlap": [],
    "abps": ["--chunk", "16"],
    "lbbsp": ["--lb-mode", "cpu", "--predictor", "ema"],
    "token": ["--token-size", "16"],
    # Inner SGD without momentum, outer Nesterov 0.5: DiLoCo's settings (0.7,
    # 0.9) on top of inner momentum 0.9 overshoot on this small model.
    "localsgd": ["--local-steps", "4", "--lr", "0.1", "--momentum", "0", "--outer-lr", "1",
                 "--outer-momentum", "0.5"],
    "async-localsgd": ["--local-steps", "4", "--dylu", "--lr", "0.1", "--momentum", "0",
                       "--outer-lr", "1", "--outer-momentum", "0.5"],
    "sync-switch": ["--switch-at", "0.25"],
}

for policy, flags in POLICIES.items():
    start = time.monotonic()
    server = harness.Server("--workers", "2", "--policy", policy, *flags, "--model", "mlp:128",
                            "--target-accuracy", "0.70", "--max-iterations", "1500",
                            "--eval-every", "10", name=policy)
    workers = harness.torch_workers(server.endpoint, 2, options={1: {"slowdown": 4}})
    threads = harness.train(server, workers, 60, f"{policy}: a worker")
    if "reached accuracy" not in server.log_text():
        harness.fail(f"{policy}: the target was not reached")
    if threads[1].report["straggle_s"] <= 0:
        harness.fail(f"{policy}: the straggler did not straggle")
    print(f"{policy}: accuracy {server.last_accuracy()} in {time.monotonic() - start:.1f} s, "
          f"steps {[t.report['steps'] for t in threads]}")
print("ok")
