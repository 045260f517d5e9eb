"""Reduce the learning rate when a metric stops improving."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

from ember.errors import ArgumentError
from ember.optim.lr_scheduler.base import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    per_group,
    set_group_lr,
)
from ember.optim.optimizer import Optimizer

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by ``factor`` once the metric passed to ``step(metric)`` has not
    improved for ``patience`` epochs, then waits ``cooldown`` epochs before counting again.

    Args:
        mode: ``"min"`` (a lower metric is better, e.g. a loss) or ``"max"`` (e.g. accuracy).
        threshold, threshold_mode: an improvement is better than ``best * (1 - threshold)``
            (``"rel"``, in ``"min"`` mode) or ``best - threshold`` (``"abs"``).
        min_lr: a floor for each group's lr; ``eps``: smaller changes are skipped.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = ReduceLROnPlateau(opt, mode="min", patience=1)
        >>> for val_loss in [1.0, 0.8, 0.8, 0.8, 0.8, 0.7]:
        ...     opt.step(); sched.step(val_loss)   # after each epoch's validation
        >>> [round(lr, 6) for lr in sched.get_last_lr()]   # reduced once, after 3 x 0.8
        [0.01]
    """

    def __init__(self, optimizer: Optimizer, mode: Literal["min", "max"] = "min",
                 factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                 threshold_mode: Literal["rel", "abs"] = "rel", cooldown: int = 0,
                 min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ArgumentError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ArgumentError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(f"threshold mode {threshold_mode} is unknown!")
        self.factor = factor
        self.optimizer = optimizer
        self.default_min_lr = None if isinstance(min_lr, list | tuple) else min_lr
        self.min_lrs = per_group("min_lr", optimizer, min_lr)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Records this epoch's metric (a number or a one-element tensor)."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=3)  # (wrapped)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            if self.default_min_lr is None:
                raise RuntimeError("The number of param groups in the optimizer "
                                   f"({len(groups)}) differs from when ReduceLROnPlateau was "
                                   f"initialized ({len(self.min_lrs)}), usually due to a new "
                                   "param group being added to the optimizer. Please modify "
                                   "the `min_lrs` field to match the length of the optimizer "
                                   "param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                set_group_lr(group, new)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min":
            bound = best * (1.0 - self.threshold) if self.threshold_mode == "rel" \
                else best - self.threshold
            return a < bound
        bound = best * (self.threshold + 1.0) if self.threshold_mode == "rel" \
            else best + self.threshold
        return a > bound
