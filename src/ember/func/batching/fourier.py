"""Batching rules of the complex-number and FFT primitives: the batch axis stays in front.

``real``, ``imag``, ``conj``, ``angle`` and ``complex`` are elementwise (``elementwise.py``
lists them); ``view_as_real``, ``view_as_complex`` and ``view_dtype`` (memory read as another
dtype) act on the last dim only, so they apply to a batched input as they are; the FFTs shift
their dims past the batch axis.
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import prim, rule
from ember.ops.primitive import apply


def _as_is_rule(name: str) -> Any:
    p = prim(name)

    def batch_as_is(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        return apply(p, xs[0], **params)

    return batch_as_is


def _fft_rule(name: str) -> Any:
    p = prim(name)

    def batch_fft(b: int, xs: tuple, bs: tuple, *, dims: tuple, **params: Any) -> Any:
        return apply(p, xs[0], dims=tuple(d + 1 for d in dims), **params)

    return batch_fft


for _name in ("view_as_real", "view_as_complex", "view_dtype"):
    rule(_name)(_as_is_rule(_name))
for _name in ("fft_c2c", "fft_r2c", "fft_c2r"):
    rule(_name)(_fft_rule(_name))
