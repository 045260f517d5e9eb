"""Weight averaging, as ``torch.optim.swa_utils``: :class:`AveragedModel` (stochastic weight
averaging or an exponential moving average of a model's weights), the :class:`SWALR` schedule
and :func:`update_bn`, which recomputes BatchNorm statistics for the averaged weights.

:class:`AveragedModel` and :func:`update_bn` work on ``nn`` modules, which this layer does not
import (DESIGN.md, layers): they are defined in :mod:`ember.utils.weight_averaging`, which
builds on both and puts them here, at PyTorch's path.

Example:
    >>> model = ember.nn.Linear(2, 1)
    >>> opt = ember.optim.SGD(model.parameters(), lr=0.1)
    >>> swa_model = AveragedModel(model)
    >>> swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2)
    >>> for epoch in range(3):
    ...     opt.zero_grad(); model(ember.ones(4, 2)).pow(2).mean().backward(); opt.step()
    ...     swa_model.update_parameters(model); swa_sched.step()
    >>> int(swa_model.n_averaged), round(swa_sched.get_last_lr()[0], 4)
    (3, 0.05)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ember.autograd.grad_mode import no_grad
from ember.errors import ArgumentError
from ember.optim.lr_scheduler.base import LRScheduler, per_group
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

# (ember.utils.weight_averaging adds "AveragedModel" and "update_bn")
__all__ = ["SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn"]

AvgFn = Callable[[Tensor, Tensor, Any], Tensor]
MultiAvgFn = Callable[[Sequence[Tensor], Sequence[Tensor], Any], None]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ArgumentError(f"Invalid decay value {decay} provided. Please provide a value in "
                            "[0,1] range.")


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """An ``avg_fn`` for :class:`AveragedModel`: the exponential moving average
    ``decay * averaged + (1 - decay) * current``.

    Example:
        >>> get_ema_avg_fn(0.9)(ember.tensor([1.0]), ember.tensor([2.0]), 1)
        tensor([1.1000])
    """
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """An ``avg_fn`` for :class:`AveragedModel`: the running mean
    ``averaged + (current - averaged) / (num_averaged + 1)`` (the default average).

    Example:
        >>> get_swa_avg_fn()(ember.tensor([1.0]), ember.tensor([4.0]), 2)
        tensor([2.])
    """

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """A ``multi_avg_fn`` for :class:`AveragedModel`: updates the averaged tensors in place to
    their exponential moving average (``lerp`` towards the current ones by ``1 - decay``;
    integer buffers take ``averaged * decay + current * (1 - decay)``, truncated).

    Example:
        >>> avg = [ember.tensor([1.0])]
        >>> get_ema_multi_avg_fn(0.9)(avg, [ember.tensor([2.0])], 1); avg
        [tensor([1.1000])]
    """
    _check_decay(decay)

    def ema_update(ema_params: Sequence[Tensor], current_params: Sequence[Tensor],
                   num_averaged: Any) -> None:
        with no_grad():
            for ema, current in zip(ema_params, current_params, strict=True):
                if ema.dtype.is_floating_point:
                    ema.lerp_(current, 1 - decay)
                else:
                    ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """A ``multi_avg_fn`` for :class:`AveragedModel`: updates the averaged tensors in place to
    the running mean (``lerp`` towards the current ones by ``1 / (num_averaged + 1)``, a float32
    weight when ``num_averaged`` is a tensor, as in PyTorch); integer tensors are refused.

    Example:
        >>> avg = [ember.tensor([1.0])]
        >>> get_swa_multi_avg_fn()(avg, [ember.tensor([4.0])], 2); avg
        [tensor([2.])]
    """

    def swa_update(averaged_params: Sequence[Tensor], current_params: Sequence[Tensor],
                   num_averaged: Any) -> None:
        with no_grad():
            for averaged, current in zip(averaged_params, current_params, strict=True):
                if not averaged.dtype.is_floating_point:
                    raise RuntimeError(
                        f"get_swa_multi_avg_fn: cannot average {averaged.dtype.name} tensors "
                        "in place (PyTorch's integer addcdiv refuses too), such as BatchNorm's "
                        "num_batches_tracked with use_buffers=True. Hint: use the default "
                        "average (or get_swa_avg_fn()) or use_buffers=False")
                averaged.lerp_(current, 1 / (num_averaged + 1))

    return swa_update


class SWALR(LRScheduler):
    """Anneals each group's lr to its ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or
    ``"linear"``), then holds it there: the schedule for the SWA phase of training.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=3, anneal_strategy="linear")
        >>> lrs = []
        >>> for epoch in range(5):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [1.0, 0.7, 0.4, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: Literal["cos", "linear"] = "cos",
                 last_epoch: int = -1) -> None:
        for lr, group in zip(per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups,
                             strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                                f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ArgumentError(f"anneal_epochs must be equal or greater than 0, got "
                                f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        """The share of the way to ``swa_lr`` at the fraction ``t`` of the annealing."""
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        lrs = []
        for group in self.optimizer.param_groups:
            # the lr the schedule started from, recovered from the current one
            if prev_alpha == 1:
                start = group["swa_lr"]
            else:
                start = (group["lr"] - prev_alpha * group["swa_lr"]) / (1 - prev_alpha)
            lrs.append(group["swa_lr"] * alpha + start * (1 - alpha))
        return lrs
