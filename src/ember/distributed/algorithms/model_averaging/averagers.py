"""Model averagers (PyTorch's ``model_averaging.averagers``): call
``average_parameters`` after each optimizer step; the averager decides when to average.

Example:
    >>> averager = PeriodicModelAverager(period=4, warmup_steps=100)
    >>> for x, y in loader:
    ...     opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    ...     averager.average_parameters(model.parameters())
"""

from __future__ import annotations

import abc
import warnings

from ember.distributed.algorithms.model_averaging import utils
from ember.distributed.process_group import ProcessGroup, resolve
from ember.errors import ArgumentError

__all__ = ["ModelAverager", "PeriodicModelAverager"]


class ModelAverager(abc.ABC):
    """Base of the averagers: a process group (None: the world) and a step count."""

    def __init__(self, process_group: ProcessGroup | None = None) -> None:
        self.process_group = (process_group if process_group is not None
                              else resolve(None, type(self).__name__))
        self.step = 0

    @abc.abstractmethod
    def average_parameters(self, params: utils.Params) -> None:
        """Averages ``params`` over the group when the averager's schedule says so."""


class PeriodicModelAverager(ModelAverager):
    """Averages the parameters every ``period`` steps once ``warmup_steps`` steps have passed
    (the warm-up step counts as the first).

    Example:
        >>> averager = PeriodicModelAverager(period=2)
        >>> averager.average_parameters(model.parameters())   # steps 0, 2, 4, …: averages
    """

    def __init__(self, period: int, warmup_steps: int = 0,
                 process_group: ProcessGroup | None = None) -> None:
        super().__init__(process_group)
        if warmup_steps < 0:
            raise ArgumentError("PeriodicModelAverager: warmup_steps must be a non-negative "
                                f"number, got {warmup_steps}")
        if period < 1:
            raise ArgumentError(f"PeriodicModelAverager: period must be positive, got {period}")
        if period == 1:
            warnings.warn("PeriodicModelAverager: with period 1 averaging the model costs no "
                          "less than DistributedDataParallel's gradient all-reduce; use DDP "
                          "alone", stacklevel=2)
        self.warmup_steps = warmup_steps
        self.period = period

    def average_parameters(self, params: utils.Params) -> None:
        """Averages the parameters that have a gradient if this step is due; counts a step."""
        if self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0:
            utils.average_parameters_or_parameter_groups(params, self.process_group)
        self.step += 1
