"""In-place random fills beyond ``uniform_``/``normal_``/``bernoulli_``: ``random_``,
``exponential_``, ``geometric_``, ``log_normal_`` and ``cauchy_``. Each draws from Ember's
generator (the default one, or ``generator=``) by transforming uniform or normal samples, and
writes them with ``copy_`` (so version counters and views stay right); an inference tensor
is refused before the draws, under the fill's name."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import refuse_inference_write
from ember.errors import ArgumentError, DTypeError
from ember.ops.int_args import as_float
from ember.ops.primitive import refuse_limited
from ember.ops.random import Generator, check_draw_bounds, normal_samples, rand, randint
from ember.ops.rounding import ceil
from ember.ops.unary import exp, log1p, tan
from ember.tensor import Tensor, method

__all__: list[str] = []


def _uniform(self: Tensor, generator: Generator | None) -> Tensor:
    # float16/bfloat16 draws round up to 1 near it (an infinite exponential sample): use float64
    dt = self.dtype if self.dtype in (dtypes.float32, dtypes.float64) else dtypes.float64
    return rand(self.shape, dtype=dt, generator=generator, device=self.device)


def _check_floating(op: str, self: Tensor) -> None:
    if not self.dtype.is_floating_point:
        raise DTypeError(f"{op}: a continuous distribution needs a floating tensor, got "
                         f"{self.dtype.name}, as in PyTorch")


def _parameter(op: str, name: str, value: Any) -> float:
    """A fill's parameter as the double PyTorch reads it: a number or a one-element tensor
    (an int past 64 bits too, as ``as_doubles``); a string or a complex is a TypeError naming
    the op, not Python's from comparing it."""
    return float(value) if type(value) is int else as_float(value, op, name)


def _check_positive(op: str, name: str, value: float) -> None:
    """PyTorch's check that a scale parameter is > 0; NaN fails it too (it drew NaNs)."""
    if not value > 0:
        raise ArgumentError(f"{op} expects {name} > 0.0, but found {name}={value}")


def _largest_integer(dt: dtypes.DType) -> int:
    """The top of ``random_()``'s default range in ``dt``: its max, or for a float the largest
    integer below which it holds every one exactly (``2**24`` for float32), as PyTorch's."""
    if dt.is_floating_point:
        return 2 ** (ml_dtypes.finfo(dt.np).nmant + 1)
    return 1 if dt is dtypes.bool_ else int(np.iinfo(dt.np).max)


_UNSET = object()  # (random_(to) reads its one number as the upper bound)


@method()
def random_(self: Tensor, from_: Any = _UNSET, to: Any = _UNSET, *,
            generator: Generator | None = None) -> Tensor:
    """Fills with integers drawn uniformly from ``[from_, to)``; ``random_(to)`` is
    ``[0, to)``; with no bound (``random_()``, or ``random_(from_, None)`` from ``from_``) up
    to every integer the dtype holds exactly (``2**24`` for float32, ``max`` for integers).

    Example:
        >>> x = ember.zeros(1000).random_(0, 10)
        >>> int(x.min()) >= 0 and int(x.max()) <= 9
        True
    """
    refuse_inference_write(self, "random_")  # (before drawing, as PyTorch)
    refuse_limited("random_", self.dtype, dtypes.WIDE_UNSIGNED)
    if self.dtype.is_complex:
        raise DTypeError(f"random_: integers cannot be drawn into a {self.dtype.name} tensor, as "
                         "in PyTorch. Hint: fill a real tensor and convert with .to()")
    if to is _UNSET:
        from_, to = 0, (None if from_ is _UNSET else from_)
    elif from_ is _UNSET:  # random_(to=n)
        from_ = 0
    if to is None:
        to = _largest_integer(self.dtype) + 1
    if from_ >= to:
        raise ArgumentError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                            f">= to={to}")
    check_draw_bounds("random_", from_, to - 1, self.dtype)
    draws = randint(from_, to, tuple(self.shape), generator=generator, device=self.device)
    return self.copy_(draws)


@method()
def exponential_(self: Tensor, lambd: float = 1.0, *,
                 generator: Generator | None = None) -> Tensor:
    """Fills with samples of the exponential distribution of rate ``lambd``.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> abs(float(ember.empty(20000).exponential_(2.0).mean()) - 0.5) < 0.02
        True
    """
    refuse_inference_write(self, "exponential_")  # (before drawing, as PyTorch)
    _check_floating("exponential_", self)
    lambd = _parameter("exponential_", "lambd", lambd)
    _check_positive("exponential_", "lambda", lambd)
    return self.copy_(-log1p(-_uniform(self, generator)) / lambd)


@method()
def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fills with samples of the geometric distribution: the number of Bernoulli(``p``) trials
    up to the first success (1, 2, …).

    Example:
        >>> _ = ember.manual_seed(0)
        >>> abs(float(ember.empty(20000).geometric_(0.25).mean()) - 4.0) < 0.15
        True
    """
    refuse_inference_write(self, "geometric_")  # (before drawing, as PyTorch)
    if self.dtype is dtypes.bool_ or self.dtype.is_complex:
        raise DTypeError(f"geometric_: not implemented for {self.dtype.name} tensors, as in "
                         "PyTorch. Hint: fill a real integer or floating tensor")
    p = _parameter("geometric_", "p", p)
    if not 0 < p < 1:
        raise ArgumentError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform(self, generator)
    return self.copy_(ceil(log1p(-u) / math.log1p(-p)).clamp(min=1))


@method()
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Generator | None = None) -> Tensor:
    """Fills with ``exp(N(mean, std²))`` samples.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> x = ember.empty(20000, dtype=ember.float64).log_normal_(0.0, 0.5)
        >>> abs(float(x.log().std()) - 0.5) < 0.02
        True
    """
    refuse_inference_write(self, "log_normal_")  # (before drawing, as PyTorch)
    _check_floating("log_normal_", self)
    mean, std = _parameter("log_normal_", "mean", mean), _parameter("log_normal_", "std", std)
    _check_positive("log_normal_", "std", std)
    dt = self.dtype if self.dtype in (dtypes.float32, dtypes.float64) else dtypes.float64
    z = normal_samples(self.shape, mean, std, dtype=dt, generator=generator, device=self.device)
    return self.copy_(exp(z))  # (a 16-bit std * z could overflow where exp(mean + std z) is 0)


@method()
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fills with samples of the Cauchy distribution ``median + sigma tan(pi (U - 1/2))``.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> abs(float(ember.empty(20000).cauchy_(3.0).median()) - 3.0) < 0.1
        True
    """
    refuse_inference_write(self, "cauchy_")  # (before drawing, as PyTorch)
    _check_floating("cauchy_", self)
    median = _parameter("cauchy_", "median", median)
    sigma = _parameter("cauchy_", "sigma", sigma)
    _check_positive("cauchy_", "sigma", sigma)
    u = _uniform(self, generator)
    return self.copy_(tan((u - 0.5) * math.pi) * sigma + median)
