"""The training driver behind ``ember train``: builds the model, optimizer and data from a
:class:`TrainConfig`, trains with a progress bar, evaluates, checkpoints every epoch, resumes,
and writes a plot and a JSON summary at the end."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import warnings
from typing import Any

import ember
import ember.nn.functional as F
from ember import nn, optim
from ember.io.atomic import atomic_write
from ember.train.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    prepare_out_dir,
    save_checkpoint,
)
from ember.train.config import ConfigError, TrainConfig
from ember.train.data import build_loaders
from ember.train.plot import plot_history
from ember.train.progress import Progress
from ember.train.tensorboard_log import TensorBoardLog


def build_model(cfg: TrainConfig) -> nn.Module:
    """The network named by ``cfg.model``, for the dataset's 1×28×28 images and 10 classes."""
    from ember import models
    if cfg.model == "resnet18":
        return models.resnet18(num_classes=10, in_channels=1)
    return getattr(models, cfg.model)(num_classes=10)


def build_optimizer(cfg: TrainConfig, model: nn.Module) -> Any:
    """SGD (with ``cfg.momentum``), Adam or AdamW at ``cfg.lr``."""
    params = model.parameters()
    if cfg.optimizer == "sgd":
        return optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay)
    cls = optim.AdamW if cfg.optimizer == "adamw" else optim.Adam
    return cls(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def cosine_lr(base: float, step: int, total: int) -> float:
    """Cosine decay from ``base`` to 0 over ``total`` steps (a function of the step alone, so
    a resumed run follows the same schedule)."""
    return base * 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def make_step(model: nn.Module, optimizer: Any, compile: bool = False) -> Any:
    """One training step ``step(x, y) -> loss``; with ``compile``, an ``ember.jit`` graph."""
    def step(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    return ember.jit.compile(step) if compile else step


def train_epoch(model: nn.Module, optimizer: Any, loader: Any, cfg: TrainConfig,
                epoch: int, first_step: int, total_steps: int, step: Any = None,
                log: TensorBoardLog | None = None, last_loss: float = 0.0) -> list[float]:
    """One pass over ``loader`` with ``step`` (default: :func:`make_step`), each step's loss
    and learning rate to ``log`` if given; returns the loss of every step. Warns when the
    loss turns NaN or infinite (``last_loss``: the step's before the first, if any)."""
    model.train()
    step = step or make_step(model, optimizer)
    losses = []
    with Progress(len(loader), f"epoch {epoch}/{cfg.epochs}", cfg.progress) as bar:
        for i, (x, y) in enumerate(loader):
            lr = cosine_lr(cfg.lr, first_step + i, total_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            losses.append(step(x, y).item())
            if not math.isfinite(losses[-1]) and math.isfinite(losses[-2] if i else last_loss):
                warnings.warn(f"epoch {epoch}, step {i + 1}: the loss is {losses[-1]}: the "
                              f"training diverged. Hint: lower --lr (now {cfg.lr})",
                              stacklevel=2)
            bar.update(len(y), losses[-1])
            if log is not None:
                log.step(first_step + i, losses[-1], lr)
        throughput = bar.throughput
    print(f"epoch {epoch}: train loss {sum(losses) / len(losses):.4f}, "
          f"{throughput:,.0f} images/s", flush=True)
    return losses


@ember.no_grad()
def evaluate(model: nn.Module, loader: Any) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` over ``loader``."""
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    for x, y in loader:
        logits = model(x)
        loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(dim=1) == y).sum().item())
        total += len(y)
    return loss_sum / total, correct / total


def _new_history() -> dict[str, list]:
    return {"step_loss": [], "train_loss": [], "test_loss": [], "test_accuracy": [],
            "epoch_seconds": []}


def run(cfg: TrainConfig) -> dict[str, Any]:
    """Trains as ``cfg`` says and returns the summary (also written to
    ``<out>/summary.json``; the curves go to ``<out>/curves.png``). ``cfg`` is resolved
    first (a plain ``TrainConfig(...)`` takes its model's defaults)."""
    cfg = cfg.resolved()
    prepare_out_dir(cfg.out, cfg.resume, cfg.overwrite)
    ember.manual_seed(cfg.seed)
    model = build_model(cfg)
    optimizer = build_optimizer(cfg, model)
    train_loader, test_loader, order = build_loaders(cfg)
    history, start = _new_history(), 1
    path = latest_checkpoint(cfg.out) if cfg.resume else None
    if path is not None:
        state = load_checkpoint(path)
        _check_resumable(path, state["config"], cfg)
        cfg = _carry_keep_last(cfg, state["config"])
        try:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            ember.set_rng_state(state["rng"])
        except (ValueError, RuntimeError, KeyError, TypeError) as e:
            raise ConfigError(f"--resume: {path} does not fit this {cfg.model} and "
                              f"{cfg.optimizer} ({e}); pick another --out") from None
        history, start = state["history"], int(state["epoch"]) + 1
        print(f"resumed from {path} (epoch {start - 1} done)")
        if start > cfg.epochs:
            print(f"the run asks for {cfg.epochs} epochs: nothing left to train (raise "
                  "--epochs to train on)")
    elif cfg.resume:
        print(f"no checkpoint in {cfg.out}: starting from scratch")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{cfg.model} ({n_params:,} parameters) on {cfg.dataset}: "
          f"{len(train_loader.dataset)} training / {len(test_loader.dataset)} test images, "
          f"{cfg.optimizer} lr {cfg.lr} batch {cfg.batch_size}, seed {cfg.seed}")
    steps_per_epoch = len(train_loader)
    step = make_step(model, optimizer, cfg.compile)
    log = TensorBoardLog(cfg, (start - 1) * steps_per_epoch, model,
                         test_loader.dataset[0][0].unsqueeze(0)) if cfg.tensorboard else None
    for epoch in range(start, cfg.epochs + 1):
        # The data order of an epoch depends only on (seed, epoch): resuming repeats it.
        order.manual_seed((cfg.seed * 1_000_003 + epoch) % 2**64)
        began = time.perf_counter()
        losses = train_epoch(model, optimizer, train_loader, cfg, epoch,
                             (epoch - 1) * steps_per_epoch, cfg.epochs * steps_per_epoch, step,
                             log, (history["step_loss"] or [0.0])[-1])
        test_loss, accuracy = evaluate(model, test_loader)
        seconds = time.perf_counter() - began
        history["step_loss"] += losses
        history["train_loss"].append(sum(losses) / len(losses))
        history["test_loss"].append(test_loss)
        history["test_accuracy"].append(accuracy)
        history["epoch_seconds"].append(seconds)
        print(f"epoch {epoch}: test loss {test_loss:.4f}, test accuracy {accuracy:.2%} "
              f"({seconds:.0f} s)", flush=True)
        if log is not None:
            log.epoch(epoch * steps_per_epoch - 1, history["train_loss"][-1], test_loss,
                      accuracy)
        save_checkpoint(cfg.out, epoch, {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "rng": ember.get_rng_state(), "history": history, "config": cfg.to_dict()},
            cfg.keep_last)
    summary = {"config": cfg.to_dict(), "epochs_done": len(history["test_accuracy"]),
               "final_test_accuracy": (history["test_accuracy"] or [None])[-1],
               "best_test_accuracy": max(history["test_accuracy"], default=None),
               "train_seconds": sum(history["epoch_seconds"]), "parameters": n_params,
               "history": history}
    with atomic_write(os.path.join(cfg.out, "summary.json")) as f:
        f.write(json.dumps(_finite_or_null(summary), indent=2, allow_nan=False).encode())
    if log is not None:
        log.close(summary)
    try:
        plot_history(history, os.path.join(cfg.out, "curves.png"),
                     f"{cfg.model} on {cfg.dataset}")
    except ImportError:
        print("no curves.png: matplotlib is missing (pip install 'ember[train]')")
    return summary


def _finite_or_null(value: Any) -> Any:
    """``value`` with NaN and infinite floats (a diverged run's losses) as None: JSON has no
    NaN, and strict readers (``jq``, JavaScript) refuse Python's ``NaN``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(v) for v in value]
    return value


# What a checkpoint's state depends on (resuming under other values cannot load it) and what
# only changes the rest of the run (resuming under other values continues with them, warned).
_SAME_RUN = ("model", "dataset", "optimizer")
_SAME_RESULTS = ("epochs", "lr", "batch_size", "momentum", "weight_decay", "seed", "train_size")


def _carry_keep_last(cfg: TrainConfig, saved: dict[str, Any]) -> TrainConfig:
    """A resumed run without ``--keep-last`` of its own keeps the checkpoint's (a run that
    kept only its newest checkpoints would otherwise go on keeping them all)."""
    kept = saved.get("keep_last")
    if cfg.keep_last is not None or type(kept) is not int or kept < 1:
        return cfg
    print(f"keeps the newest {kept} checkpoints, as the run did (--keep-last)")
    return dataclasses.replace(cfg, keep_last=kept)


def _check_resumable(path: str, saved: dict[str, Any], cfg: TrainConfig) -> None:
    """Refuses a checkpoint of another model, dataset or optimizer; warns, naming each, when
    settings that shape the results differ from the checkpoint's."""
    for name in _SAME_RUN:
        if saved.get(name) != getattr(cfg, name):
            raise ConfigError(f"--resume: {path} holds a run with {name} {saved.get(name)}, "
                              f"not {getattr(cfg, name)}; pick another --out, or resume with "
                              f"--{name.replace('_', '-')} {saved.get(name)}")
    changed = [f"{name} {saved.get(name)} -> {getattr(cfg, name)}" for name in _SAME_RESULTS
               if saved.get(name) != getattr(cfg, name) and
               (name != "momentum" or cfg.optimizer == "sgd")]  # (adam's: none, 0.9 before)
    if changed:
        warnings.warn(f"--resume: the run continues with settings that differ from {path}'s: "
                      f"{', '.join(changed)}; it will not match an uninterrupted run",
                      stacklevel=3)
