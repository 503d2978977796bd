"""The residual CNN job of this example, in one place: the model, the data,
the loss, the batch and the optimizer recipe, both as dmlps-server's flags
(server_flags) and as plain PyTorch (torch_recipe), so that worker.py,
evaluator.py and programs that run the same job another way (PyTorch DDP in
bench/ddp_compare.py) all train the same thing.

The model (model()): a small ResNet for 28x28 grey images, 223,162
parameters and 873 floats of BatchNorm state (running means, variances and
counts). It takes the rows dmlps.load_train gives (784 floats a sample) and
reshapes them itself:

    stem    conv 3x3 1->16, BN, ReLU, max pool 2x2     16 x 14 x 14
    block1  residual block of 16 channels              16 x 14 x 14
    down2   conv 3x3 stride 2 16->32, BN, ReLU         32 x 7 x 7
    block2  residual block of 32 channels              32 x 7 x 7
    down3   conv 3x3 stride 2 32->96, BN, ReLU         96 x 4 x 4
    block3  residual block of 96 channels              96 x 4 x 4
    head    global average pool, Dropout(0.2), Linear(96, 10)

A residual block is conv-BN-ReLU-conv-BN plus the identity, then ReLU;
convolutions before a BatchNorm have no bias. About 5.2 M multiply-adds a
sample; forward and backward of one batch of 32 take about 20 ms on one
thread of a 2-core machine.

The recipe: AdamW (lr 2e-3, betas 0.9,0.999, weight decay 0.05 except on the
BatchNorm weights and all biases), gradients clipped to norm 1, linear
warmup over min(200, steps/20) steps then cosine decay to 5% of the rate at
the last step. On dmlps the server applies all of it (the workers only
compute gradients); a step is one apply of the policy, one round under the
synchronous policies (docs/optimizers.md)."""

import collections
import fnmatch
import math

import torch

import dmlps

NAME = "resnet"
BATCH = 32          # samples per worker step
EVAL_EVERY = 100    # iterations between evaluations
TARGET = 0.92       # test accuracy

LR = 2e-3
BETAS = (0.9, 0.999)
WEIGHT_DECAY = 0.05
# The parameters without weight decay: every bias and the BatchNorm weights
# (the BatchNorm modules, and only they, have "bn" in their names).
NO_DECAY = ("*.bias", "*bn*")
CLIP_NORM = 1.0
FINAL_FACTOR = 0.05


def warmup_steps(steps: int) -> int:
    """The steps of linear warmup at the start of a run of ``steps``."""
    return min(200, steps // 20)


class Residual(torch.nn.Module):
    """relu(x + bn2(conv2(relu(bn1(conv1(x)))))): 3x3 convolutions that keep
    the channels and the size."""

    def __init__(self, channels: int):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def _conv_bn(cin: int, cout: int, stride: int = 1) -> torch.nn.Sequential:
    nn = torch.nn
    return nn.Sequential(collections.OrderedDict(
        conv=nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        bn=nn.BatchNorm2d(cout), relu=nn.ReLU()))


def model(classes: int = 10) -> torch.nn.Module:
    """A fresh ResNet (PyTorch's default initialisation, from torch's current
    random state: seed with torch.manual_seed first) taking n x 784 rows."""
    nn = torch.nn
    stem = _conv_bn(1, 16)
    stem.add_module("pool", nn.MaxPool2d(2))
    return nn.Sequential(collections.OrderedDict(
        unflatten=nn.Unflatten(1, (1, 28, 28)),
        stem=stem,                       # 16 x 14 x 14
        block1=Residual(16),
        down2=_conv_bn(16, 32, 2),       # 32 x 7 x 7
        block2=Residual(32),
        down3=_conv_bn(32, 96, 2),       # 96 x 4 x 4
        block3=Residual(96),
        pool=nn.AdaptiveAvgPool2d(1),
        flatten=nn.Flatten(),
        dropout=nn.Dropout(0.2),
        fc=nn.Linear(96, classes)))


def _tensors(pair):
    x, y = pair
    return torch.from_numpy(x), torch.from_numpy(y)


def train_data(data: str = "fashion-mnist"):
    """The training set as (x: n x 784 float32, y: n int64) tensors."""
    return _tensors(dmlps.load_train(data))


def test_data(data: str = "fashion-mnist"):
    """The test set as (x: n x 784 float32, y: n int64) tensors."""
    return _tensors(dmlps.load_test(data))


def loss_fn() -> torch.nn.Module:
    """The training and evaluation loss."""
    return torch.nn.CrossEntropyLoss()


def no_decay(name: str) -> bool:
    """Whether the parameter ``name`` (from named_parameters()) takes no
    weight decay."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in NO_DECAY)


def server_flags(steps: int) -> list:
    """dmlps-server's optimizer flags for the recipe over a run of ``steps``
    server steps."""
    return ["--optimizer", "adamw", "--lr", f"{LR:g}",
            "--betas", ",".join(f"{b:g}" for b in BETAS),
            "--weight-decay", f"{WEIGHT_DECAY:g}",
            "--param-group", "|".join(NO_DECAY) + ":weight_decay=0",
            "--clip-grad-norm", f"{CLIP_NORM:g}",
            "--lr-schedule", f"cosine:{decay_steps(steps)}:{FINAL_FACTOR:g}",
            "--warmup", str(warmup_steps(steps))]


def decay_steps(steps: int) -> int:
    """The length of the cosine decay that follows the warmup, so that the
    rate comes down to FINAL_FACTOR at the run's last step."""
    return max(1, steps - warmup_steps(steps))


def lr_factor(step: int, steps: int) -> float:
    """The factor of the rate at optimizer step ``step`` (from 0) of a run of
    ``steps``, as dmlps-server computes it (docs/optimizers.md): (k+1)/W for
    step k of the W warmup steps, then cosine from 1 down to FINAL_FACTOR over
    decay_steps(steps), and FINAL_FACTOR after that."""
    warmup = warmup_steps(steps)
    if step < warmup:
        return (step + 1) / warmup
    decay = decay_steps(steps)
    t = min(step - warmup, decay)
    return FINAL_FACTOR + (1 - FINAL_FACTOR) * (1 + math.cos(math.pi * t / decay)) / 2


def torch_recipe(module: torch.nn.Module, steps: int):
    """The recipe in plain PyTorch for ``module`` (a model()) over ``steps``
    optimizer steps: (optimizer, scheduler, clip_norm), an AdamW with the
    decayed and the undecayed parameters in two groups, a LambdaLR to step
    once after each optimizer step, and the max_norm for
    torch.nn.utils.clip_grad_norm_, to apply before each optimizer step."""
    named = list(module.named_parameters())
    decayed = [p for name, p in named if not no_decay(name)]
    undecayed = [p for name, p in named if no_decay(name)]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": WEIGHT_DECAY},
                                   {"params": undecayed, "weight_decay": 0.0}],
                                  lr=LR, betas=BETAS)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer,
                                                  lambda step: lr_factor(step, steps))
    return optimizer, scheduler, CLIP_NORM
