"""Two PyTorch workers (dmlps.torch, an MLP with mlp:128's layout) train
the server's built-in mlp:128 on Fashion-MNIST under BSP to 0.84 test
accuracy, the target the C++ workers reach in cli.bsp_trains."""

import harness

server = harness.Server("--workers", "2", "--policy", "bsp", "--model", "mlp:128",
                        "--target-accuracy", "0.84", "--max-iterations", "4000",
                        "--eval-every", "25")
threads = harness.train(server, harness.torch_workers(server.endpoint, 2), 240)
for t in threads:
    if t.report["stop_reason"] != "target accuracy reached" or t.report["steps"] < 1:
        harness.fail(f"unexpected report {t.report}")
accuracy = server.last_accuracy()
if accuracy < 0.84 or "reached accuracy" not in server.log_text():
    harness.fail(f"final accuracy {accuracy} is below 0.84")
print(f"ok: accuracy {accuracy}; reports {[t.report for t in threads]}")
