"""The PyTorch example (share/dmlps/examples/torch-trainer/train.py), run
as 2 processes that each load their shard when the server names it, trains
the server's mlp:128 to 0.80 test accuracy."""

import os

import harness

example = os.path.join(harness.EXAMPLES, "torch-trainer", "train.py")
server = harness.Server("--workers", "2", "--policy", "bsp", "--model", "mlp:128",
                        "--target-accuracy", "0.80", "--max-iterations", "3000",
                        "--eval-every", "25")
children = [harness.start_script([example, server.endpoint, "--slowdown", slowdown],
                                  f"example-{rank}")
            for rank, slowdown in ((0, "1"), (1, "2"))]
if server.wait(120) != 0:
    harness.fail("dmlps-server failed")
for out in harness.finish_scripts(children, "an example worker"):
    if "target accuracy reached" not in out:
        harness.fail(f"an example worker did not stop at the target: {out!r}")
log = server.log_text()
if "reached accuracy" not in log or "with 30000 samples" not in open(
        os.path.join(harness.WORK, "example-0.log")).read():
    harness.fail("the example did not train on its shard to the target")
print(f"ok: accuracy {server.last_accuracy()}")
