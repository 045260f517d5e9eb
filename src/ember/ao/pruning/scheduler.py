"""Sparsity schedulers (``torch.ao.pruning.BaseScheduler``, ``LambdaSL``, ``CubicSL``): each
``step()`` sets every group's ``sparsity_level`` for the next ``sparsifier.step()``."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ember.ao.pruning.base_sparsifier import BaseSparsifier
from ember.errors import ArgumentError

__all__ = ["BaseScheduler", "LambdaSL", "CubicSL"]


def _check_sparsifier(sparsifier: Any) -> None:
    if not isinstance(sparsifier, BaseSparsifier):
        raise TypeError(f"{type(sparsifier).__name__} is not an instance of "
                        "ember.ao.pruning.BaseSparsifier")


def _counting(sparsifier: BaseSparsifier) -> None:
    """Makes ``sparsifier.step`` count its calls in ``sparsifier._step_count``."""
    step = sparsifier.step
    if not getattr(step, "_with_counter", False):
        @functools.wraps(step)
        def counted(*args: Any, **kwargs: Any) -> Any:
            sparsifier._step_count += 1
            return step(*args, **kwargs)
        counted._with_counter = True
        sparsifier.step = counted
    sparsifier._step_count = 0


class BaseScheduler:
    """The base of sparsity schedulers: a subclass's ``get_sl()`` gives each group's level
    for epoch ``last_epoch``; the groups' levels at construction are the ``base_sl``. The
    constructor takes the first step.

    Example:
        >>> sparsifier = WeightNormSparsifier(sparsity_level=0.8)
        >>> sparsifier.prepare(nn.Sequential(nn.Linear(4, 4)), config=None)
        >>> scheduler = LambdaSL(sparsifier, sl_lambda=lambda epoch: min(epoch / 4, 1))
        >>> scheduler.get_last_sl()
        [0.0]
        >>> sparsifier.step(); scheduler.step(); scheduler.get_last_sl()
        [0.2]
    """

    def __init__(self, sparsifier: BaseSparsifier, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        _check_sparsifier(sparsifier)
        self.sparsifier = sparsifier
        self.base_sl = [group["sparsity_level"] for group in sparsifier.groups]
        self.last_epoch = last_epoch
        _counting(sparsifier)
        self._step_count = 0
        self.verbose = verbose
        self._get_sl_called_within_step = False
        self.step()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the sparsifier."""
        return {key: value for key, value in self.__dict__.items() if key != "sparsifier"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_sl(self) -> list[float]:
        """The levels the last :meth:`step` set."""
        return self._last_sl

    def get_sl(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__}: a scheduler defines get_sl()")

    def _warn_outside_step(self) -> None:
        if not self._get_sl_called_within_step:
            warnings.warn("To get the last sparsity level computed by the scheduler, please use "
                          "`get_last_sl()`.", stacklevel=3)

    def print_sl(self, is_verbose: bool, group: int, sl: float, epoch: int | None = None) -> None:
        """Prints a group's new level when ``is_verbose``."""
        if is_verbose and epoch is None:
            print(f"Adjusting sparsity level of group {group} to {sl:.4e}.")
        elif is_verbose:
            print(f"Epoch {epoch:5d}: adjusting sparsity level of group {group} to {sl:.4e}.")

    def __repr__(self) -> str:
        return (f"{type(self).__name__} (\nSparsifier {self.sparsifier}\n"
                f"    base_sl: {self.base_sl}\n)")

    def step(self, epoch: int | None = None) -> None:
        """Moves to the next epoch and sets the groups' levels from :meth:`get_sl`."""
        if self._step_count == 1:
            if not hasattr(self.sparsifier.step, "_with_counter"):
                warnings.warn("Seems like `sparsifier.step()` has been overridden after "
                              "sparsity scheduler initialization. Please, make sure to call "
                              "`sparsifier.step()` before `scheduler.step()`.", stacklevel=2)
            elif self.sparsifier._step_count < 1:
                warnings.warn("Detected call of `scheduler.step()` before `sparsifier.step()`. "
                              "You have to make sure you run the sparsifier.step() BEFORE any "
                              "calls to the scheduler.step().", stacklevel=2)
        self._step_count += 1
        self._get_sl_called_within_step = True
        try:
            self.last_epoch += 1
            values = self.get_sl()
        finally:
            self._get_sl_called_within_step = False
        for i, (group, sl) in enumerate(zip(self.sparsifier.groups, values)):
            group["sparsity_level"] = sl
            self.print_sl(self.verbose, i, sl, epoch)
        self._last_sl = [group["sparsity_level"] for group in self.sparsifier.groups]
        self.sparsifier.enable_mask_update = True

    def _make_sure_a_list(self, var: Any) -> list:
        """``var`` for each group: repeated, or checked to have one entry per group."""
        n = len(self.sparsifier.groups)
        if not isinstance(var, (list, tuple)):
            return [var] * n
        if len(var) != n:
            raise ArgumentError(f"Expected variable of length {n}, but got {len(var)}")
        return list(var)


class LambdaSL(BaseScheduler):
    """Sets each group's level to its base level times ``sl_lambda(epoch)`` (one function,
    or one per group).

    Example:
        >>> sparsifier = NearlyDiagonalSparsifier()
        >>> sparsifier.prepare(nn.Sequential(nn.Linear(2, 2)),
        ...                    config=[{"tensor_fqn": "0.weight", "sparsity_level": 0.5}])
        >>> LambdaSL(sparsifier, sl_lambda=lambda epoch: 2.0).get_last_sl()
        [1.0]
    """

    def __init__(self, sparsifier: BaseSparsifier,
                 sl_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1, verbose: bool = False) -> None:
        _check_sparsifier(sparsifier)
        self.sparsifier = sparsifier
        if not isinstance(sl_lambda, (list, tuple)):
            self.sl_lambdas = [sl_lambda] * len(sparsifier.groups)
        elif len(sl_lambda) != len(sparsifier.groups):
            raise ArgumentError(f"Expected {len(sparsifier.groups)} lr_lambdas, but got "
                                f"{len(sl_lambda)}")
        else:
            self.sl_lambdas = list(sl_lambda)
        super().__init__(sparsifier, last_epoch, verbose)

    def get_sl(self) -> list[float]:
        self._warn_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.sl_lambdas, self.base_sl)]


class CubicSL(BaseScheduler):
    """Zhu & Gupta's cubic schedule from ``init_sl`` at step ``init_t`` to the groups' base
    levels after ``total_t`` updates every ``delta_t`` steps:
    ``s_f + (s_0 - s_f) (1 - (t - t_0) / (n dt))^3``, clamped between the two (0 before
    ``init_t`` with ``initially_zero``). Each setting may be one per group.

    Example:
        >>> round(CubicSL.sparsity_compute_fn(s_0=0.0, s_f=0.8, t=5, t_0=0, dt=1, n=10), 4)
        0.7
    """

    def __init__(self, sparsifier: BaseSparsifier, init_sl: float | list = 0.0,
                 init_t: int | list = 0, delta_t: int | list = 10, total_t: int | list = 100,
                 initially_zero: bool | list = False, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        _check_sparsifier(sparsifier)
        self.sparsifier = sparsifier
        self.init_sl = self._make_sure_a_list(init_sl)
        self.init_t = self._make_sure_a_list(init_t)
        self.delta_t = self._make_sure_a_list(delta_t)
        self.total_t = self._make_sure_a_list(total_t)
        self.initially_zero = self._make_sure_a_list(initially_zero)
        super().__init__(sparsifier, last_epoch, verbose)

    @staticmethod
    def sparsity_compute_fn(s_0: float, s_f: float, t: int, t_0: int, dt: int, n: int,
                            initially_zero: bool = False) -> float:
        """The level at step ``t``."""
        if initially_zero and t < t_0:
            return 0
        s_t = s_f + (s_0 - s_f) * (1.0 - (t - t_0) / (dt * n)) ** 3
        return max(s_0, min(s_f, s_t))

    def get_sl(self) -> list[float]:
        self._warn_outside_step()
        return [self.sparsity_compute_fn(s_0, s_f, self.last_epoch, t_0, dt, n, zero)
                for s_0, s_f, t_0, dt, n, zero in zip(self.init_sl, self.base_sl, self.init_t,
                                                      self.delta_t, self.total_t,
                                                      self.initially_zero)]
