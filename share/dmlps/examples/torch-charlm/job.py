"""The character-level language model job: model, corpus, loss and training
recipe in one place, so that worker.py, evaluator.py, the tests and programs
that run the same job another way (bench/ddp_compare.py under PyTorch DDP)
all agree on it.

The model is a small GPT-style transformer (see model()); the corpus is the
text of Debian's `fortunes` package (/usr/share/games/fortunes), nothing
downloaded; the score is the validation loss, the mean cross-entropy per
character in nats (ln 97 = 4.57 for a uniform guess).

The recipe is AdamW with GPT-style decay groups, gradient clipping and a
warmup then cosine schedule, run by dmlps-server for the synchronous
policies (server_flags) and by torch.optim in plain PyTorch (torch_recipe);
for localsgd and async-localsgd, AdamW inside each worker (local_optimizer,
as DiLoCo) and the average of the workers' models on the server
(server_flags)."""

import fnmatch
import functools
import math
import os
from collections.abc import Callable

import numpy as np
import torch

NAME = "charlm"
CORPUS = "/usr/share/games/fortunes"
CONTEXT = 64  # characters a sample sees (T)
WIDTH = 128
HEADS = 4
LAYERS = 6
# Newline, then printable ASCII (space to tilde); anything else (tabs, the
# odd control or non-ASCII character) is the last id, "unknown".
ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
VOCAB_SIZE = len(ALPHABET) + 1  # 97
UNKNOWN = VOCAB_SIZE - 1
VALIDATION_SHARE = 0.05  # the last 5% of the characters

BATCH = 16  # sequences per worker step
STEPS = 100  # server steps of README.md's runs: the schedule's length
EVAL_EVERY = 20  # server iterations between evaluations
TARGET_LOSS = 2.75  # validation nats per character; see README.md for the runs behind it

# 3e-3: in plain PyTorch, 200 steps of 64 sequences took the validation
# loss (its first 512 sequences) to 2.32, where 1e-3 took it to 2.44.
LR = 3e-3
BETAS = (0.9, 0.95)
WEIGHT_DECAY = 0.1
CLIP_NORM = 1.0
FINAL_LR_FACTOR = 0.1  # the cosine ends at this share of LR
# Tensors without weight decay, as is usual for GPT-style models: biases
# (MultiheadAttention's in_proj_bias too), LayerNorm weights, embeddings.
NO_DECAY = ("*bias", "*norm*", "*embed*")
# Local SGD: the server's outer step on the workers' pseudo-gradients. With
# a few local steps a round, the outer step is the plain average (rate 1,
# no momentum); DiLoCo's Nesterov SGD at 0.7 and 0.9 is made for rounds of
# hundreds of steps, and with 8 its momentum overshoots (README.md).
OUTER_LR = 1.0
OUTER_MOMENTUM = 0.0
LOCAL_STEPS = 8  # --local-steps of README.md's local-SGD runs
LOCAL_POLICIES = ("localsgd", "async-localsgd", "async-localsgd-dylu")


class Block(torch.nn.Module):
    """A pre-LayerNorm transformer block: causal self-attention, then a 4x
    MLP with GELU, each added to the residual stream."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(width)
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, h, mask):
        x = self.norm1(h)
        h = h + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        return h + self.mlp(self.norm2(h))


class CharTransformer(torch.nn.Module):
    """Token and learned position embeddings, pre-LayerNorm blocks, a final
    LayerNorm and an output head: int64 [batch, T] in (T at most the
    context), logits [batch, T, vocab] out, position i seeing positions up
    to i only. The causal mask is made in forward, not kept as a buffer:
    dmlps.torch would carry a buffer through the server as model state."""

    def __init__(self, vocab=VOCAB_SIZE, context=CONTEXT, width=WIDTH, heads=HEADS,
                 layers=LAYERS):
        super().__init__()
        self.token_embed = torch.nn.Embedding(vocab, width)
        self.position_embed = torch.nn.Embedding(context, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab)
        # GPT-2's initialisation: N(0, 0.02) weights, the projections into
        # the residual stream scaled by 1/sqrt(2 layers), zero biases.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02
                if name.endswith(("out_proj.weight", "mlp.2.weight")):
                    std /= math.sqrt(2 * layers)
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        length = tokens.shape[1]
        positions = torch.arange(length, device=tokens.device)
        h = self.token_embed(tokens) + self.position_embed(positions)
        mask = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
        for block in self.blocks:
            h = block(h, mask)
        return self.head(self.norm(h))


def model() -> torch.nn.Module:
    """A fresh CharTransformer (T=64, d=128, 4 heads, 6 layers, MLP 4d,
    vocab 97) from torch's current random state: 1,223,009 parameters; one
    forward and backward pass over a BATCH of 16 sequences took 133 ms
    (median; 126 ms at best) on one thread of a 2-core machine."""
    return CharTransformer()


@functools.lru_cache(maxsize=2)
def _corpus_ids(path):
    """The corpus under ``path`` as one int64 array of ids: its plain-text
    files (not the .dat indexes nor the .u8 links) in sorted name order,
    decoded as UTF-8 with errors replaced."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no corpus at {path}: install the Debian package fortunes "
                                "(apt-get install fortunes)")
    names = sorted(n for n in os.listdir(path)
                   if not n.endswith((".dat", ".u8"))
                   and not os.path.islink(os.path.join(path, n))
                   and os.path.isfile(os.path.join(path, n)))
    if not names:
        raise FileNotFoundError(f"no text files in {path}: install the Debian package "
                                "fortunes (apt-get install fortunes)")
    text = "".join(_read_text(os.path.join(path, n)) for n in names)
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    table = np.full(128, UNKNOWN, dtype=np.int64)
    for i, c in enumerate(ALPHABET):
        table[ord(c)] = i
    ids = np.full(len(codes), UNKNOWN, dtype=np.int64)
    ascii_ = codes < 128
    ids[ascii_] = table[codes[ascii_]]
    return ids


def _read_text(file):
    with open(file, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def _windows(ids):
    """(x, y): the non-overlapping windows of T+1 ids, x the first T of
    each, y the last T, as int64 tensors [n, T]."""
    count = len(ids) // (CONTEXT + 1)
    windows = torch.from_numpy(ids[:count * (CONTEXT + 1)].reshape(count, CONTEXT + 1))
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def _split(path):
    ids = _corpus_ids(path or CORPUS)
    return len(ids) - int(len(ids) * VALIDATION_SHARE), ids


def train_data(path: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The training samples (x, y), int64 [n, T] each, y the next character
    of each of x's: the corpus at ``path`` (default CORPUS) but its last 5%.
    FileNotFoundError, naming the package, without the corpus."""
    cut, ids = _split(path)
    return _windows(ids[:cut])


def test_data(path: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The validation samples (x, y), as train_data's, from the last 5% of
    the corpus's characters."""
    cut, ids = _split(path)
    return _windows(ids[cut:])


def loss_fn() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The loss: (logits [B, T, V], targets [B, T]) -> the mean
    cross-entropy over every position, in nats."""
    def loss(outputs, targets):
        return torch.nn.functional.cross_entropy(outputs.reshape(-1, outputs.shape[-1]),
                                                 targets.reshape(-1))
    return loss


def no_decay(name: str) -> bool:
    """Whether the parameter called ``name`` (from named_parameters()) is
    left out of weight decay: matched by one of NO_DECAY's globs, as
    dmlps-server's --param-group matches them (fnmatch, '*' across dots)."""
    return any(fnmatch.fnmatchcase(name, glob) for glob in NO_DECAY)


def param_groups(module: torch.nn.Module) -> list[dict]:
    """torch.optim parameter groups of the recipe: decayed, then not."""
    named = list(module.named_parameters())
    return [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": WEIGHT_DECAY},
            {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]


def warmup_steps(steps: int) -> int:
    """The recipe's warmup for a run of ``steps`` server steps: 5% of it."""
    return steps // 20


def lr_factor(step: int, steps: int) -> float:
    """The rate's factor at step ``step`` (from 0) of ``steps``, as
    dmlps-server's --warmup W --lr-schedule cosine:(steps - W):F computes it
    (docs/optimizers.md): (k + 1) / W while warming up, then the cosine
    from 1 to F over the run's remaining steps, F after."""
    warmup = warmup_steps(steps)
    if step < warmup:
        return (step + 1) / warmup
    length = steps - warmup
    t = min(step - warmup, length)
    return FINAL_LR_FACTOR + (1 - FINAL_LR_FACTOR) * (1 + math.cos(math.pi * t / length)) / 2


def server_flags(steps: int, policy: str = "bsp") -> list[str]:
    """dmlps-server's flags of the recipe for a run of ``steps`` server
    steps (under asp, ssp and dssp a step is a push) under ``policy`` (as
    dmlps-server or dmlps-bench names it: localsgd:H is localsgd). For all
    but the local-SGD policies, the server's AdamW with its groups,
    clipping and schedule (the cosine ends at step ``steps``). For localsgd
    and async-localsgd, the outer step's rate and momentum only:
    H is the policy's (--local-steps, LOCAL_STEPS here; dmlps-bench's
    localsgd:H sets it), and the workers step with local_optimizer()."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if policy.split(":")[0] in LOCAL_POLICIES:
        return ["--outer-lr", f"{OUTER_LR:g}", "--outer-momentum", f"{OUTER_MOMENTUM:g}"]
    warmup = warmup_steps(steps)
    return ["--optimizer", "adamw", "--lr", f"{LR:g}", "--betas", "%g,%g" % BETAS,
            "--weight-decay", f"{WEIGHT_DECAY:g}",
            "--param-group", "|".join(NO_DECAY) + ":weight_decay=0",
            "--clip-grad-norm", f"{CLIP_NORM:g}",
            "--lr-schedule", f"cosine:{steps - warmup}:{FINAL_LR_FACTOR:g}",
            "--warmup", str(warmup)]


def local_optimizer(module: torch.nn.Module) -> torch.optim.Optimizer:
    """DiLoCo's inner optimizer for ``module``'s worker: AdamW with the
    recipe's rate (constant), betas and decay groups."""
    return torch.optim.AdamW(param_groups(module), lr=LR, betas=BETAS)


def torch_recipe(module: torch.nn.Module, steps: int) -> tuple:
    """The synchronous recipe in plain PyTorch for ``steps`` steps:
    (torch.optim.AdamW over the decay groups, a LambdaLR with
    dmlps-server's warmup and cosine factor, the norm to clip the gradient
    to with clip_grad_norm_ before each step)."""
    optimizer = torch.optim.AdamW(param_groups(module), lr=LR, betas=BETAS)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: lr_factor(k, steps))
    return optimizer, scheduler, CLIP_NORM
