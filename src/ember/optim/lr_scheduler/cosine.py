"""Cosine annealing, with and without warm restarts (SGDR)."""

from __future__ import annotations

import math

from ember.errors import ArgumentError, DivisionByZero
from ember.optim.lr_scheduler.base import LRScheduler
from ember.optim.optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "CosineAnnealingWarmRestarts"]


class CosineAnnealingLR(LRScheduler):
    """Anneals the lr from ``initial_lr`` to ``eta_min`` along half a cosine over ``T_max``
    epochs (and back up over the next ``T_max``, as PyTorch's recursive form does).

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.0868, 0.055, 0.0232, 0.01, 0.0232]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        if T_max == 0:  # (PyTorch fails on it, "integer modulo by zero", at a step)
            raise DivisionByZero("CosineAnnealingLR: T_max=0; the number of epochs of a "
                                "half cosine must be positive")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, low = self.last_epoch, self.T_max, self.eta_min  # noqa: N806
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        if self._step_count == 1 and t > 0:
            return [low + (base - low) * (1 + math.cos(t * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for lr, base in zip(lrs, self.base_lrs, strict=False)]  # (see _set_lrs)
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - low) + low for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        cos = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, with ``T_0`` first and each period
    ``T_mult`` times the previous (SGDR, Loshchilov & Hutter). ``step(epoch)`` accepts
    fractional epochs, for stepping once per batch.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     for i in range(2):                 # two batches per epoch
        ...         opt.step(); sched.step(epoch + i / 2)
        ...         lrs.append(round(sched.get_last_lr()[0], 4))
        >>> lrs
        [0.1, 0.0854, 0.05, 0.0146, 0.1, 0.0962, 0.0854, 0.0691, 0.05, 0.0309, 0.0146, 0.0038]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ArgumentError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ArgumentError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, float | int):
            raise ArgumentError(f"Expected float or int eta_min, but got {eta_min} of type "
                                f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cos = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advances one epoch, or jumps to ``epoch`` (which may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # (PyTorch's rule, also when resumed at a later epoch)
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ArgumentError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)  # (``_step_count`` stays 0, as in PyTorch)
        with self._within_step():
            values = self.get_lr()
        self._set_lrs(values)
