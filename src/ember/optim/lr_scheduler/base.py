"""The :class:`LRScheduler` base: counts epochs (or steps) and writes each group's ``lr``.

Schedulers follow PyTorch's semantics: the recursive ("chainable") rule in :meth:`get_lr`,
which reads the current ``lr`` of each group so that several schedulers can act together, and
a closed form used when ``step(epoch)`` is given an explicit epoch.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.errors import ArgumentError
from ember.optim.optimizer import OPTIMIZER_TRACE, Optimizer, traced
from ember.tensor import Tensor

__all__ = ["LRScheduler", "per_group", "set_group_lr"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)


class LRScheduler:
    """Base class of the learning-rate schedulers.

    Subclasses implement :meth:`get_lr` (the new lr of each group from the current ones) and,
    where one exists, ``_get_closed_form_lr`` (the lr as a function of ``last_epoch``).

    Args:
        optimizer: the optimizer whose groups' ``lr`` this scheduler sets.
        last_epoch: the index of the last epoch when resuming; -1 starts afresh (and records
            each group's ``initial_lr``).

    Example:
        >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = ember.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
        >>> for epoch in range(100):
        ...     opt.step(); sched.step()        # after each epoch's training
        >>> round(sched.get_last_lr()[0], 6), sched.last_epoch
        (0.0001, 100)
    """

    _is_initial = False  # True during the step made at construction (PyTorch's flag)
    _get_lr_called_within_step = False  # (PyTorch's name: it is in its state dicts too)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # (an override is an effect inside a compiled function too)
            cls.step = _effect_in_trace(cls.__dict__["step"])
        if "get_lr" in cls.__dict__:
            cls.get_lr = _warn_outside_step(cls.__dict__["get_lr"])

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]  # (a tensor lr is copied: steps fill it in place)
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming scheduler with last_epoch={last_epoch} >= 0: "
                                   "load the optimizer's state dict first, or use "
                                   "last_epoch=-1 for a fresh run")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        if "_scheduled_step" not in vars(optimizer):  # (the first scheduler: PyTorch wraps the
            optimizer._opt_called = False          # optimizer's step then, and steps made
        optimizer._scheduled_step = vars(optimizer).get("step")  # before do not count)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True  # (resuming: that step keeps each group's loaded lr)
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rate of each group after the current ``last_epoch`` (chainable form)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group as last set by this scheduler."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advances one epoch (or step) and sets each group's ``lr``."""
        if OPTIMIZER_TRACE.tracer is not None:  # inside ember.jit.compile: an effect
            return traced("scheduler_step", self, lambda: self.step(epoch), epoch)
        if self._step_count == 1 and \
                vars(self.optimizer).get("step") is not getattr(self.optimizer, "_scheduled_step",
                                                                None):
            warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate "
                          "scheduler initialization. Please, make sure to call "
                          "`optimizer.step()` before `lr_scheduler.step()`.", UserWarning,
                          stacklevel=2)
        elif self._step_count == 1 and not getattr(self.optimizer, "_opt_called", True):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "Call `optimizer.step()` before `lr_scheduler.step()`, otherwise the "
                          "first value of the learning rate schedule is skipped.",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Sets each group's lr for the next epoch, or for ``epoch`` by the closed form."""
        with self._within_step():
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        self._set_lrs(values)

    @contextlib.contextmanager
    def _within_step(self) -> Iterator[None]:
        """Marks ``get_lr`` calls as made by ``step`` (others warn)."""
        self._get_lr_called_within_step = True
        try:
            yield
        finally:
            self._get_lr_called_within_step = False

    def _set_lrs(self, values: Sequence[float]) -> None:
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ArgumentError(f"{type(self).__name__}.step(): the optimizer has {len(groups)} "
                                f"param groups but the scheduler was built for {len(values)} "
                                "(a group added by add_param_group afterwards?); build the "
                                "scheduler after adding every group")
        for group, lr in zip(groups, values, strict=True):
            set_group_lr(group, lr)
        self._last_lr = self._group_lrs()

    def _group_lrs(self) -> list[float]:
        """Each group's lr (a copy of a tensor lr, which later steps fill in place)."""
        return [lr.clone() if isinstance(lr := group["lr"], Tensor) else lr
                for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state (everything but the optimizer), as plain Python values."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`."""
        self.__dict__.update(state_dict)


def _effect_in_trace(step: Callable) -> Callable:
    """Wraps a subclass's ``step``: inside ``ember.jit.compile`` the whole call (the
    counters it advances, the lrs it sets, ``get_last_lr()``) is one effect, run again on every
    call; its arguments (an epoch, a metric) would be frozen, so the tracer refuses them."""

    @functools.wraps(step)
    def wrapper(self: LRScheduler, *args: Any, **kwargs: Any) -> Any:
        if OPTIMIZER_TRACE.tracer is not None:
            return traced("scheduler_step", self, lambda: wrapper(self, *args, **kwargs),
                          *args, *kwargs.values())
        return step(self, *args, **kwargs)

    return wrapper


def _warn_outside_step(get_lr: Callable) -> Callable:
    """Wraps a subclass's ``get_lr``: called other than by ``step`` it warns, as PyTorch does
    (it computes the next lrs from the current ones, and some schedules move momentum)."""

    @functools.wraps(get_lr)
    def wrapper(self: LRScheduler) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        return get_lr(self)

    return wrapper


def set_group_lr(group: dict[str, Any], lr: Any) -> None:
    """Sets a group's ``lr``: a tensor lr is filled in place (it keeps its identity and
    dtype, so a float32 one rounds the value), as PyTorch's schedulers do."""
    current = group["lr"]
    if isinstance(current, Tensor):
        with no_grad():
            current.fill_(float(lr))
    else:
        group["lr"] = lr


def per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """One value per parameter group: a list/tuple of the right length, or one value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ArgumentError(f"expected {n} values for {name}, got {len(value)}")
        return list(value)
    return [value] * n
