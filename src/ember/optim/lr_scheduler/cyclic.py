"""Cyclical learning rates: the lr (and inversely the momentum) goes back and forth between two
bounds."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any, Literal

from ember.errors import ArgumentError, DivisionByZero
from ember.optim.lr_scheduler.base import LRScheduler, per_group, set_group_lr
from ember.optim.optimizer import Optimizer

__all__ = ["CyclicLR"]

MODES = ("triangular", "triangular2", "exp_range")


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017): each cycle takes the lr from ``base_lr`` up to
    ``max_lr`` in ``step_size_up`` steps and back in ``step_size_down`` (default: the same);
    the height of the cycle is scaled by ``mode`` (``"triangular"``: 1, ``"triangular2"``:
    halved every cycle, ``"exp_range"``: ``gamma ** iteration``) or by ``scale_fn`` of the cycle
    number (``scale_mode="cycle"``) or of the iteration (``"iterations"``). With
    ``cycle_momentum`` the momentum (Adam's beta1) moves the other way between
    ``max_momentum`` and ``base_momentum``. Step it after every batch.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
        >>> sched = CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2, mode="triangular2")
        >>> lrs = []
        >>> for batch in range(9):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3, 0.2, 0.1]
        >>> round(opt.param_groups[0]["momentum"], 4)
        0.8875
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None,
                 mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: Literal["cycle", "iterations"] = "cycle",
                 cycle_momentum: bool = True, base_momentum: float | list[float] = 0.8,
                 max_momentum: float | list[float] = 0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        base_lrs = per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                set_group_lr(group, lr)
        self.max_lrs = per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        if up == 0:  # (PyTorch fails dividing by it at the start of the first cycle)
            raise DivisionByZero(f"CyclicLR: step_size_up={step_size_up}; the number of "
                                "steps up to max_lr in each cycle must be positive")
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in MODES and scale_fn is None:
            raise ArgumentError(f"mode is invalid and scale_fn is None: mode={mode!r}, expected "
                                f"one of {', '.join(MODES)} (or give a scale_fn)")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else _mode_scale_mode(mode)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ArgumentError("optimizer must support momentum or beta1 with "
                                    "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for hi, lo, group in zip(self.max_momentums, self.base_momentums,
                                         optimizer.param_groups, strict=True):
                    self._set_momentum(group, hi)
                    group["max_momentum"], group["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The height factor of the cycle at ``x`` (the cycle number or the iteration)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            fraction = x / self.step_ratio
        else:
            fraction = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * fraction * scale
               for base, top in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums, strict=False):  # (see _set_lrs)
                self._set_momentum(group, hi - (hi - lo) * fraction * scale)
        return lrs

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; a ``scale_fn`` is kept only as a callable object's
        ``__dict__`` (functions and lambdas are not saved: pass them again)."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                     else dict(fn.__dict__))
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; this scheduler's ``scale_fn`` stays (an
        object's saved ``__dict__`` is loaded into it)."""
        state = dict(state_dict)
        saved_fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if saved_fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(saved_fn)


def _mode_scale_mode(mode: str) -> str:
    """What a built-in mode's scale reads: the cycle number, or the iteration (exp_range)."""
    return "iterations" if mode == "exp_range" else "cycle"
