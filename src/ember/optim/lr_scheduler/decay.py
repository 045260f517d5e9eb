"""Schedules that scale the learning rate by factors: step, multi-step, exponential, constant,
linear, polynomial, and user-given (lambda, multiplicative) ones."""

from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ember.errors import ArgumentError, DivisionByZero
from ember.optim.lr_scheduler.base import LRScheduler
from ember.optim.optimizer import Optimizer

__all__ = ["ConstantLR", "ExponentialLR", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "PolynomialLR", "StepLR"]


class StepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every ``step_size`` epochs.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.1, 0.05, 0.05, 0.025, 0.025]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        if step_size == 0:  # (PyTorch fails on it, "integer modulo by zero", at a step)
            raise DivisionByZero("StepLR: step_size=0; the number of epochs between decays "
                                "must be positive")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` at each milestone epoch (twice if listed twice).

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = MultiStepLR(opt, milestones=[2, 5], gamma=0.1)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.1, 0.01, 0.01, 0.01, 0.001]
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        # JSON turns the milestone keys into strings
        self.milestones = Counter({int(k): v for k, v in dict(self.milestones).items()})


class ExponentialLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every epoch.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = ExponentialLR(opt, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.05, 0.025, 0.0125]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiplies the lr by ``factor`` until epoch ``total_iters``, then restores it.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.05, 0.05, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ArgumentError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        reached = self.last_epoch >= self.total_iters
        return [base * (self.factor + reached * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scales the lr by a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs (a warm-up).

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = LinearLR(opt, start_factor=0.25, total_iters=3)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.025, 0.05, 0.075, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ArgumentError("Starting multiplicative factor expected to be greater than 0 and "
                                "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ArgumentError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, \
            total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        span = self.end_factor - self.start_factor
        factor = 1.0 + span / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * span)
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch)  # (PyTorch's order: span * done / total)
        factor = self.start_factor + (self.end_factor - self.start_factor) * done \
            / self.total_iters
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the lr as ``(1 - epoch / total_iters) ** power`` until ``total_iters``.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = PolynomialLR(opt, total_iters=4, power=2.0)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.0563, 0.025, 0.0062, 0.0, 0.0]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = self._group_lrs()
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        factor = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base * factor for base in self.base_lrs]


class _LambdaScheduler(LRScheduler):
    """Holds one user function per group; saves the state of callable objects (not of plain
    functions, which cannot be saved) as PyTorch does."""

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, list | tuple):
            if len(lr_lambda) != n:
                raise ArgumentError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, fn_state in zip(self.lr_lambdas, saved, strict=True):
            if fn_state is not None:
                fn.__dict__.update(fn_state)


class LambdaLR(_LambdaScheduler):
    """Sets the lr to ``initial_lr * lr_lambda(epoch)`` (one function, or one per group).

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.5 ** epoch)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.05, 0.025, 0.0125]
    """

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch)
                for base, fn in zip(self.base_lrs, self.lr_lambdas, strict=True)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiplies the lr by ``lr_lambda(epoch)`` every epoch after the first.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.9)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.09, 0.081, 0.0729]
    """

    def get_lr(self) -> list[float]:
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        return [lr * fn(self.last_epoch)  # (a group added later: _set_lrs says so)
                for lr, fn in zip(lrs, self.lr_lambdas, strict=False)]
