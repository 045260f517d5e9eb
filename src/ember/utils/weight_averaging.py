"""PyTorch's :class:`AveragedModel` and :func:`update_bn`, at their path
``ember.optim.swa_utils``: they are ``nn`` modules and functions of them, and the optimizers'
layer does not import ``nn`` (DESIGN.md, layers), so this module, which builds on both, defines
them and puts them there (with the averaging functions and ``SWALR`` that live there).

Example:
    >>> ember.optim.swa_utils.AveragedModel is AveragedModel
    True
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable
from typing import Any

import ember
from ember.autograd.grad_mode import no_grad
from ember.nn.module import Module
from ember.nn.normalization import _BatchNorm
from ember.optim import swa_utils
from ember.optim.swa_utils import AvgFn, MultiAvgFn, get_swa_avg_fn
from ember.tensor import Tensor

__all__ = ["AveragedModel", "update_bn"]


class AveragedModel(Module):
    """A copy of ``model`` whose weights are the average of the weights it is given through
    :meth:`update_parameters` (stochastic weight averaging by default, or the average
    ``avg_fn(averaged, current, num_averaged)`` returns, or ``multi_avg_fn`` applies in place
    to lists of tensors; give at most one). Buffers are copied from the model, or averaged too
    with ``use_buffers=True``. ``n_averaged`` (an int64 buffer) counts the updates; the first
    one copies the model's weights.

    Example:
        >>> model = ember.nn.Linear(1, 1)
        >>> average = ember.optim.swa_utils.get_ema_multi_avg_fn(0.5)
        >>> ema = AveragedModel(model, multi_avg_fn=average)
        >>> for value in (1.0, 3.0):
        ...     _ = model.weight.data.fill_(value); ema.update_parameters(model)
        >>> ema.module.weight
        Parameter containing:
        tensor([[2.]], requires_grad=True)
    """

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Averages ``model``'s current parameters (and buffers, with ``use_buffers``) in."""
        if self.use_buffers:
            ours = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = list(self.parameters()), model.parameters()
        pairs = [(a, b.detach().to(a.device)) for a, b in zip(ours, theirs, strict=False)]
        count = int(self.n_averaged)
        with no_grad():
            if count == 0:
                for averaged, current in pairs:
                    averaged.copy_(current)
            elif self.multi_avg_fn is not None:
                by_kind: dict[tuple[str, str], list[tuple[Tensor, Tensor]]] = {}
                for averaged, current in pairs:
                    key = (str(averaged.device), averaged.dtype.name)
                    by_kind.setdefault(key, []).append((averaged, current))
                for group in by_kind.values():
                    self.multi_avg_fn([a for a, _ in group], [c for _, c in group],
                                      self.n_averaged.to(group[0][0].device))
            else:
                average = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for averaged, current in pairs:
                    averaged.copy_(average(averaged.detach(), current,
                                           self.n_averaged.to(averaged.device)))
            if not self.use_buffers:  # keep the buffers in sync with the model
                for ours_b, theirs_b in zip(self.module.buffers(), model.buffers(), strict=True):
                    ours_b.copy_(theirs_b.detach().to(ours_b.device))
            self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recomputes the running statistics of ``model``'s BatchNorm layers in one pass over
    ``loader`` (their cumulative average over the batches; the first element of a list or
    tuple batch is the input), then restores their momentum and the model's training mode.
    Nothing runs when the model has no BatchNorm layer.

    Example:
        >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2))
        >>> update_bn([ember.ones(4, 2)], model)
        >>> int(model[1].num_batches_tracked)
        1
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, list | tuple):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


swa_utils.AveragedModel, swa_utils.update_bn = AveragedModel, update_bn
swa_utils.__all__ += __all__
