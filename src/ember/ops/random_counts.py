"""Sampling counts: ``poisson`` (events at a rate) and ``binomial`` (successes in ``count``
trials), elementwise, from Ember's generators (seeded by ``manual_seed``).

As in PyTorch, ``poisson``'s gradient is zero everywhere (its output stays in the graph) and
``binomial``'s output carries none.
"""

from __future__ import annotations

import numpy as np

from ember.errors import DTypeError, OpError, describe, dtype_name, is_floating_input
from ember.ops.broadcast import broadcast_tensors
from ember.ops.forwarding import check_tensors
from ember.ops.primitive import TensorSpec, apply, primitive
from ember.ops.random import Generator, Sample
from ember.ops.select import zero_grad_from
from ember.tensor import Tensor

__all__ = ["poisson", "binomial"]

_MAX_RATE = float(np.iinfo(np.int64).max - 10 * np.sqrt(np.iinfo(np.int64).max))  # NumPy's


@primitive
class Poisson(Sample):
    name = "poisson"

    def forward(self, xp, rate, *, generator):
        if rate.size and not rate.min() >= 0:  # (a NaN fails too)
            raise OpError(f"poisson: invalid Poisson rate, expected rates to be non-negative, "
                          f"got a minimum of {rate.min()} in a "
                          f"{describe(rate.shape, rate.dtype)} tensor")
        if rate.size and not rate.max() <= _MAX_RATE:
            raise OpError(f"poisson: rates up to {_MAX_RATE:.4g} are supported (the counts are "
                          f"64-bit integers), got a maximum of {rate.max()} in a "
                          f"{describe(rate.shape, rate.dtype)} tensor")
        counts = self.rng(generator).poisson(rate.astype("float64"))
        return xp.asarray(xp.asarray(counts).astype(rate.dtype))

    def infer(self, rate, *, generator):
        return rate


@primitive
class Binomial(Sample):
    name = "binomial"

    def forward(self, xp, count, prob, *, generator):
        n = xp.maximum(xp.nan_to_num(count), 0).astype("int64")  # PyTorch: negative → 0 draws
        p = xp.clip(xp.nan_to_num(prob), 0, 1)
        draws = xp.asarray(self.rng(generator).binomial(n, p)).astype(count.dtype)
        return xp.where(xp.isnan(prob), prob, draws)  # a NaN probability draws NaN

    def infer(self, count, prob, *, generator):
        return TensorSpec(count.shape, count.dtype)


def _check_floating(op: str, *tensors: Tensor) -> None:
    for t in tensors:
        if not is_floating_input(op, "input", t):
            raise DTypeError(f"{op}: expected floating-point tensors, got "
                             f"{dtype_name(op, 'input', t)}. "
                             "Hint: convert with .float()")
    if len({t.dtype for t in tensors}) > 1:
        raise DTypeError(f"{op}: count and prob must have one dtype, got "
                         f"{', '.join(dtype_name(op, 'input', t) for t in tensors)}")


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with rates ``input`` (non-negative), in ``input``'s dtype.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> ember.poisson(ember.tensor([0.0, 4.0])).shape
        ember.Size([2])
    """
    check_tensors("poisson", input=input)
    _check_floating("poisson", input)
    return zero_grad_from(input, apply(Poisson, input.detach(), generator=generator))


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial samples: successes in ``count`` trials of probability ``prob`` (broadcast
    together; both floating of one dtype). Negative counts draw 0 and probabilities are
    clipped to [0, 1], as in PyTorch.

    Example:
        >>> ember.binomial(ember.tensor([10.0, 0.0]), ember.tensor([1.0, 0.5]))
        tensor([10.,  0.])
    """
    _check_floating("binomial", count, prob)
    count, prob = broadcast_tensors(count.detach(), prob.detach())
    return apply(Binomial, count, prob, generator=generator)
