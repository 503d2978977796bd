"""PyTorch workers train a model the server does not know (dmlps-server
--model external): the first worker's layout and initial values become the
server's model, a Python evaluator (dmlps.torch.evaluator) scores the
snapshots, and BSP reaches 0.84 test accuracy as with the built-in model. A
worker whose module has another layout is refused with the first
difference named, and the run goes on."""

import time

import harness
import torch

import dmlps
import dmlps.torch

server = harness.Server("--model", "external", "--evaluator", "--workers", "2", "--policy",
                        "bsp", "--target-accuracy", "0.84", "--max-iterations", "4000",
                        "--eval-every", "25")
workers = harness.torch_workers(server.endpoint, 2)
x_test, y_test = dmlps.load_test("fashion-mnist")
evaluator = dmlps.torch.evaluator(server.endpoint, dmlps.torch.mlp(784, [128], 10),
                                  torch.nn.CrossEntropyLoss(), torch.from_numpy(x_test),
                                  torch.from_numpy(y_test))
threads = [harness.WorkerThread(w) for w in workers + [evaluator]]
for t in threads:
    t.start()

# Once the model's layout is set, a worker with another one is refused.
deadline = time.monotonic() + 60
while "joined" not in server.log_text():
    if time.monotonic() > deadline:
        harness.fail("no worker joined within 60 s")
    time.sleep(0.05)
wrong = harness.torch_workers(server.endpoint, 1, model_hidden=(64,))[0]
try:
    wrong.run()
    harness.fail("a worker with another layout was admitted")
except dmlps.RefusedError as e:
    if "layout" not in str(e) or "[128,784]" not in str(e).replace(" ", ""):
        harness.fail(f"the refusal does not name the first difference: {e}")
    refusal = str(e)

deadline = time.monotonic() + 240
for t in threads:
    t.join(max(0.0, deadline - time.monotonic()))
if any(t.is_alive() for t in threads):
    for w in workers + [evaluator]:
        w.stop()
    harness.fail("a worker or the evaluator was still running after 240 s")
if server.wait(30) != 0:
    harness.fail("dmlps-server failed")
for t in threads:
    if t.error is not None:
        harness.fail(f"a worker or the evaluator raised {t.error!r}")
if threads[-1].report["snapshots"] < 1:
    harness.fail(f"the evaluator scored nothing: {threads[-1].report}")
accuracy = server.last_accuracy()
if accuracy < 0.84 or "reached accuracy" not in server.log_text():
    harness.fail(f"final accuracy {accuracy} is below 0.84")
print(f"ok: accuracy {accuracy}; evaluator {threads[-1].report}; refused: {refusal}")
