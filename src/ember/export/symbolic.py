"""Sizes that follow dynamic dims. The model is traced at the example sizes and again with the
dynamic dims grown (each name by its own amount); a size that differs between the traces is
written as ``coeff · (product of dims) + offset`` when one such expression gives it in every
trace (``B``, ``B * T``, ``B * H * W``, ``2 * T - 1``), a scalar constant as such a size or a
ratio of them (``1/B``), and anything else is refused."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# the most dims one size multiplies: ``B * H * W`` counts a training BatchNorm2d's batch with
# three dynamic dims, ``B * T * H * D`` a flattened 4-d tensor
_DEGREE = 4
# the largest floor divisor tried: a pooling's or strided convolution's stride
_DIVISOR = 8


@dataclass(frozen=True)
class SizeExpr:
    """``coeff * prod(symbols) + offset``, a size computed from the dynamic dims; with
    ``div``, ``coeff * ((prod(symbols) + inner) // div) + offset`` (a pooling's or strided
    window's count, ``(T + 1) // 2``).

    Example:
        >>> e = SizeExpr(2, ("T",), -1)
        >>> str(e), e.evaluate({"T": 5})
        ('2*T - 1', 9)
        >>> str(SizeExpr(1, ("T",), 0, div=2, inner=1))
        '(T + 1) // 2'
    """

    coeff: int
    symbols: tuple[str, ...]
    offset: int
    div: int = 1
    inner: int = 0

    def evaluate(self, values: dict[str, int]) -> int:
        product = math.prod(values[s] for s in self.symbols)
        return self.coeff * ((product + self.inner) // self.div) + self.offset

    def __str__(self) -> str:
        text = "*".join(self.symbols)
        if self.div != 1:
            text = f"({text} + {self.inner}) // {self.div}" if self.inner else \
                f"{text} // {self.div}"
            if self.coeff != 1:
                text = f"({text})"
        if self.coeff != 1:
            text = f"{self.coeff}*{text}"
        if self.offset:
            text += f" {'+' if self.offset > 0 else '-'} {abs(self.offset)}"
        return text


def fit(sizes: list[int], env: list[dict[str, int]]) -> SizeExpr | int | None:
    """The size ``sizes[i]`` seen in trace ``i`` (whose dims are ``env[i]``): an ``int`` when
    it is the same in every trace, a :class:`SizeExpr` giving all of them, or None. A floor
    division (``div`` up to ``_DIVISOR``) is tried where no product fits, and taken only when
    exactly one fits (else the traces cannot tell which one the model computes)."""
    if all(s == sizes[0] for s in sizes):
        return sizes[0]
    names = sorted(env[0])
    monomials = [m for degree in range(1, _DEGREE + 1)
                 for m in itertools.combinations_with_replacement(names, degree)]
    products = {symbols: [math.prod(e[s] for s in symbols) for e in env] for symbols in monomials}
    found = [e for symbols, m in products.items()
             if (e := _linear(sizes, m, symbols)) is not None]
    # the simplest that fits (``t`` over ``2*b + 1`` when the traces cannot tell them apart)
    best = min(found, key=lambda e: (abs(e.coeff - 1) + abs(e.offset) > 0, len(e.symbols),
                                     abs(e.coeff), abs(e.offset)), default=None)
    if best is not None:
        return best
    floors = [e for symbols, m in products.items() for div in range(2, _DIVISOR + 1)
              for inner in range(div)
              if (e := _linear(sizes, [(v + inner) // div for v in m], symbols, div, inner))]
    return floors[0] if len(floors) == 1 else None


def _linear(sizes: list[int], m: list[int], symbols: tuple[str, ...], div: int = 1,
            inner: int = 0) -> SizeExpr | None:
    """``coeff * m[i] + offset`` giving ``sizes[i]`` in every trace, or None."""
    j = next((j for j, v in enumerate(m) if v != m[0]), None)
    if j is None:
        return None
    coeff, rest = divmod(sizes[j] - sizes[0], m[j] - m[0])
    if rest or coeff == 0:
        return None
    offset = sizes[0] - coeff * m[0]
    if all(size == coeff * mi + offset for size, mi in zip(sizes, m)):
        return SizeExpr(coeff, symbols, offset, div, inner)
    return None


@dataclass(frozen=True)
class SizeRatio:
    """``numerator / denominator`` of sizes: a scalar constant made from dynamic sizes (the
    ``1/n`` of a mean, the ``n/(n - 1)`` of an unbiased variance).

    Example:
        >>> r = SizeRatio(SizeExpr(1, ("B",), 0), SizeExpr(1, ("B",), -1))
        >>> str(r), r.evaluate({"B": 5})
        ('B / (B - 1)', 1.25)
    """

    numerator: SizeExpr | int
    denominator: SizeExpr | int

    def evaluate(self, values: dict[str, int]) -> float:
        def value(e: SizeExpr | int) -> int:
            return e if isinstance(e, int) else e.evaluate(values)

        return value(self.numerator) / value(self.denominator)

    def __str__(self) -> str:
        den = str(self.denominator)
        return f"{self.numerator} / {f'({den})' if ' ' in den else den}"


def fit_scalar(values: list, env: list[dict[str, int]], dtype: Any) -> SizeExpr | SizeRatio | None:
    """A 0-d constant seen as ``values[i]`` in trace ``i``, as a size ``m`` (:func:`fit`) or
    a ratio ``1/m``, ``m/(m - 1)``, ``1/(m - 1)``, rounded to ``dtype`` as the traces computed
    it; None when none gives every value. (``m`` is found by inverting each form, the
    rounding undone by trying the neighbouring integers.)"""
    forms = ((lambda v: v, lambda m: m),
             (lambda v: 1 / v, lambda m: SizeRatio(1, m)),
             (lambda v: v / (v - 1), lambda m: SizeRatio(m, _minus_one(m))),
             (lambda v: 1 / v + 1, lambda m: SizeRatio(1, _minus_one(m))))
    for invert, make in forms:
        with np.errstate(divide="ignore", invalid="ignore"):
            guesses = [float(invert(np.float64(v))) for v in values]
        if not all(math.isfinite(g) for g in guesses):
            continue
        for shifts in itertools.product((0, -1, 1), repeat=len(values)):
            size = fit([round(g) + d for g, d in zip(guesses, shifts)], env)
            if not isinstance(size, SizeExpr):
                continue
            found = make(size)
            if all(_gives(found, e, v, dtype) for v, e in zip(values, env)):
                return found
    return None


def _gives(found: SizeExpr | SizeRatio, env: dict[str, int], value: Any, dtype: Any) -> bool:
    """Whether ``found`` computes ``value`` (rounded to ``dtype``) at the sizes ``env``."""
    try:
        return bool(np.asarray(found.evaluate(env), dtype=dtype) == value)
    except ZeroDivisionError:
        return False


def _minus_one(size: SizeExpr) -> SizeExpr:
    return SizeExpr(size.coeff, size.symbols, size.offset - 1)
