"""The benchmark workloads: for each name, a builder that makes the model, the optimizer and
synthetic data once, and returns a ``step()`` closure for one framework.

Training step = forward + loss + backward + optimizer step + zero_grad, float32. The Ember side
uses ``ember.models``; the PyTorch side its twin in :mod:`benchmarks.torch_twins`, loaded with
the same weights when both frameworks are in the process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Spec:
    """What a workload trains (or runs): model, input shape, batch, optimizer."""

    model: str
    batch: int
    input: tuple
    optimizer: tuple = ("sgd", {"lr": 0.01, "momentum": 0.9})
    train: bool = True
    flash: bool = False
    tokens: bool = False  # integer token input (gpt)


TRAINING = {
    "mlp": Spec("mlp", 256, (1, 28, 28)),
    "cnn": Spec("cnn", 128, (1, 28, 28), ("adam", {"lr": 1e-3})),
    "resnet18": Spec("resnet18", 32, (3, 32, 32)),
    "gpt": Spec("gpt", 16, (128,), ("adamw", {"lr": 3e-4}), tokens=True),
    "gpt_sdpa": Spec("gpt", 16, (128,), ("adamw", {"lr": 3e-4}), flash=True, tokens=True),
    "infer_mlp_b1": Spec("mlp", 1, (1, 28, 28), train=False),
    "infer_cnn_b1": Spec("cnn", 1, (1, 28, 28), train=False),
}
CEILINGS = ("gemm", "membw")
ALL = (*TRAINING, "ops", *CEILINGS)


def data(spec: Spec, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic inputs and targets (made once, before timing)."""
    rng = np.random.default_rng(0)
    batch = max(1, int(spec.batch * scale))
    if spec.tokens:
        x = rng.integers(0, 256, (batch, *spec.input)).astype(np.int64)
        return x, rng.integers(0, 256, (batch, *spec.input)).astype(np.int64)
    x = rng.standard_normal((batch, *spec.input), dtype=np.float32)
    return x, rng.integers(0, 10, batch).astype(np.int64)


def ember_model(spec: Spec) -> Any:
    import ember
    import ember.models

    if spec.model == "gpt":
        return ember.models.gpt(flash=spec.flash)
    return getattr(ember.models, spec.model)()


def torch_model(spec: Spec, weights: dict | None = None) -> Any:
    import torch

    from benchmarks import torch_twins

    model = {"mlp": torch_twins.mlp, "cnn": torch_twins.cnn, "resnet18": torch_twins.ResNet18,
             "gpt": lambda: torch_twins.GPT(flash=spec.flash)}[spec.model]()
    if weights is not None:
        model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    return model


def make_step(spec: Spec, lib: Any, model: Any, x: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    """One step of ``spec`` written once for both frameworks: ``lib`` is ``ember`` or ``torch``
    (Ember's API is PyTorch's, so the same code runs on either)."""
    inputs, targets = lib.from_numpy(x), lib.from_numpy(y)
    if not spec.train:
        model.eval()

        def infer() -> Any:
            with lib.no_grad():
                return model(inputs)
        return infer
    name, kwargs = spec.optimizer
    opt = {"sgd": lib.optim.SGD, "adam": lib.optim.Adam,
           "adamw": lib.optim.AdamW}[name](model.parameters(), **kwargs)
    cross_entropy = lib.nn.functional.cross_entropy

    def train() -> Any:
        out = model(inputs)
        loss = cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return train


def build(name: str, framework: str, scale: float = 1.0, weights: dict | None = None) -> tuple:
    """(step, model) of a training/inference workload for ``framework`` ("ember"/"torch")."""
    spec = TRAINING[name]
    x, y = data(spec, scale)
    model = ember_model(spec) if framework == "ember" else torch_model(spec, weights)
    return make_step(spec, importlib.import_module(framework), model, x, y), model


def compiled_step(name: str) -> tuple[Callable[[], Any], Any]:
    """(a call of Ember's compiled step, the ``ember.jit.compile`` object) of workload
    ``name``: a training workload's whole step compiled; an inference one's model, called on
    the input under ``no_grad``, as a server passes each request."""
    import ember

    spec = TRAINING[name]
    step, model = build(name, "ember")
    if spec.train:
        compiled = ember.jit.compile(step)
        return compiled, compiled
    compiled = ember.jit.compile(model)
    x = ember.from_numpy(data(spec)[0])

    def infer() -> Any:
        with ember.no_grad():
            return compiled(x)
    return infer, compiled


def forward_flops(name: str, scale: float = 1.0) -> int:
    """FLOPs of one forward pass: 2 × MACs of every Linear/Conv and the attention matmuls,
    counted by Ember's profiler (the matmul, einsum and conv cost rules) over one forward."""
    import ember
    import ember.models

    spec = TRAINING[name]
    x, _ = data(spec, scale)
    model = ember_model(spec)
    with ember.no_grad(), ember.profiler.profile(with_flops=True) as prof:
        model(ember.from_numpy(x))
    return sum(e.flops for e in prof.events() if e.name in ("matmul", "einsum", "conv"))


def step_flops(name: str, scale: float = 1.0) -> int:
    """FLOPs of one step: 3 × forward for training (forward + two backward GEMMs), 1× else."""
    return forward_flops(name, scale) * (3 if TRAINING[name].train else 1)


def gemm(framework: str, n: int) -> Callable[[], Any]:
    """An n×n×n float32 matrix product (the machine's compute ceiling)."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    if framework == "ember":
        import ember

        ea, eb = ember.from_numpy(a), ember.from_numpy(b)
        return lambda: ea @ eb
    import torch

    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return lambda: ta @ tb


def membw(framework: str, nbytes: int) -> Callable[[], Any]:
    """A copy of ``nbytes`` into a preallocated buffer (the machine's memory ceiling)."""
    n = nbytes // 4
    src = np.ones(n, np.float32)
    if framework == "ember":
        import ember

        es, ed = ember.from_numpy(src), ember.zeros(n)
        return lambda: ed.copy_(es)
    import torch

    ts, td = torch.from_numpy(src), torch.zeros(n)
    return lambda: td.copy_(ts)
