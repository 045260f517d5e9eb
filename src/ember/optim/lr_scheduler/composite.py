"""Schedulers made of schedulers: one after another (``SequentialLR``) or all at once
(``ChainedScheduler``)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.optim.lr_scheduler.base import LRScheduler, set_group_lr
from ember.optim.optimizer import Optimizer

__all__ = ["ChainedScheduler", "SequentialLR"]


class _Composite(LRScheduler):
    """Saves each inner scheduler's state dict in ``_schedulers``."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, inner, strict=True):
            scheduler.load_state_dict(saved)


def _check_schedulers(kind: str, schedulers: Sequence[Any], optimizer: Optimizer) -> None:
    from ember.optim.lr_scheduler.plateau import ReduceLROnPlateau

    for i, scheduler in enumerate(schedulers):
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ArgumentError(f"{kind} does not support `ReduceLROnPlateau` scheduler as it "
                                "requires additional kwargs to be specified when calling `step`, "
                                f"but got one at index {i} in the given schedulers sequence")
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{kind} expects a list of schedulers, but index {i} is "
                            f"{type(scheduler).__name__}")
        if scheduler.optimizer is not optimizer:
            raise ArgumentError(f"{kind} expects all schedulers to belong to the same optimizer, "
                                f"but got scheduler {type(scheduler).__name__} at index {i} to be "
                                "different than the optimizer passed in")


class SequentialLR(_Composite):
    """Runs ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; each later
    scheduler starts from epoch 0 at its milestone.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = SequentialLR(opt, [LinearLR(opt, start_factor=0.5, total_iters=2),
        ...                                  ExponentialLR(opt, gamma=0.5)], milestones=[2])
        >>> lrs = []
        >>> for epoch in range(6):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.05, 0.075, 0.1, 0.05, 0.025, 0.0125]
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        if not schedulers:
            raise ArgumentError("SequentialLR expects at least one scheduler, but got no "
                                "scheduler.")
        _check_schedulers("Sequential Schedulers", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ArgumentError("Sequential Schedulers expects number of schedulers provided to be "
                                "one more than the number of milestone points, but got number of "
                                f"schedulers {len(schedulers)} and the number of milestones to be "
                                f"equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            set_group_lr(group, group["initial_lr"])
        self.recursive_undo()  # undo the step each made when it was built
        first = self._schedulers[bisect_right(self._milestones, 0)]  # (a milestone may be 0)
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Steps the scheduler whose span holds the next epoch."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Takes one epoch off ``last_epoch`` of each scheduler in ``sched`` (default: this
        one's schedulers), through nested composites: the step each made when it was built.

        Example:
            >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
            >>> inner = ExponentialLR(opt, gamma=0.5)
            >>> seq = SequentialLR(opt, [ConstantLR(opt, factor=0.5), inner], milestones=[2])
            >>> inner.last_epoch, seq.recursive_undo(), inner.last_epoch
            (-1, None, -2)
        """
        scheduler = self if sched is None else sched
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                self.recursive_undo(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1


class ChainedScheduler(_Composite):
    """Steps every scheduler in the list at each ``step()``, so their factors compose.

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2),
        ...                             ExponentialLR(opt, gamma=0.9)])
        >>> lrs = []
        >>> for epoch in range(4):
        ...     opt.step(); lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
        >>> lrs
        [0.05, 0.045, 0.081, 0.0729]
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if not schedulers:
            raise ArgumentError("ChainedScheduler expects at least one scheduler to be chained, "
                                "but got no scheduler.")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def step(self) -> None:  # type: ignore[override]
        """Steps each scheduler in turn."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()
