"""The 1cycle policy: warm up to a maximum lr, then anneal far below the start."""

from __future__ import annotations

import math
from typing import Any, Literal

from ember.errors import ArgumentError
from ember.optim.lr_scheduler.base import LRScheduler, per_group
from ember.optim.optimizer import Optimizer

__all__ = ["OneCycleLR"]


def _anneal(strategy: str, start: float, end: float, pct: float) -> float:
    if strategy == "cos":
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): lr from ``max_lr / div_factor`` up to ``max_lr`` over
    ``pct_start`` of the steps, then down to ``initial_lr / final_div_factor``; momentum (or
    Adam's beta1) cycles the other way between ``max_momentum`` and ``base_momentum``. Step it
    after every batch.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=6)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.04, 0.9944, 0.8117, 0.4626, 0.1335, 0.0]
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: Literal["cos", "linear"] = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not 0 <= pct_start <= 1 or not isinstance(pct_start, float | int):
            raise ArgumentError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                                f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                       "base_momentum", "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                       "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                       "max_momentum"),
            ]
        if last_epoch == -1:
            for lr, group in zip(per_group("max_lr", optimizer, max_lr),
                                 optimizer.param_groups, strict=True):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ArgumentError("optimizer must support momentum or beta1 with "
                                    "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for hi, lo, group in zip(per_group("max_momentum", optimizer, max_momentum),
                                         per_group("base_momentum", optimizer, base_momentum),
                                         optimizer.param_groups, strict=True):
                    self._set_momentum(group, hi)
                    group["max_momentum"], group["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        if t > self.total_steps:
            raise ArgumentError(f"Tried to step {t} times. The specified number of total steps is "
                                f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if t <= end or i == len(self._schedule_phases) - 1:
                    pct = (t - start) / (end - start)
                    lr = _anneal(self._anneal_func_type, group[phase["start_lr"]],
                                 group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        self._set_momentum(group, _anneal(
                            self._anneal_func_type, group[phase["start_momentum"]],
                            group[phase["end_momentum"]], pct))
                    break
                start = end
            lrs.append(lr)
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str,
           end_momentum: str) -> dict[str, Any]:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ArgumentError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ArgumentError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if epochs <= 0 or not isinstance(epochs, int):
        raise ArgumentError(f"Expected positive integer epochs, but got {epochs}")
    if steps_per_epoch <= 0 or not isinstance(steps_per_epoch, int):
        raise ArgumentError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch
