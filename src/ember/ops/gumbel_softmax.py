"""``gumbel_softmax``: differentiable samples from a categorical distribution given by
logits (the Gumbel-softmax / Concrete relaxation), with the straight-through ``hard`` form.
A composite of a uniform sample, logs and ``softmax``."""

from __future__ import annotations

import warnings

import numpy as np

from ember import dtypes
from ember.errors import DTypeError, is_floating_input
from ember.ops.convert import cast
from ember.ops.creation import arange
from ember.ops.dims import normalize_dim
from ember.ops.random import Generator, rand
from ember.ops.softmax import softmax
from ember.tensor import Tensor

__all__: list[str] = []


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1, *, generator: Generator | None = None) -> Tensor:
    """``softmax((logits + g) / tau)`` along ``dim``, ``g`` fresh standard Gumbel noise. With
    ``hard=True`` the value is the one-hot of its argmax while the gradient is the soft
    sample's (straight-through). ``eps`` is unused, as in PyTorch (deprecated).

    Example:
        >>> y = F.gumbel_softmax(ember.randn(2, 5), tau=0.5, hard=True)
        >>> y.sum(-1)
        tensor([1., 1.])
    """
    op = "gumbel_softmax"
    if not is_floating_input(op, "logits", logits):
        raise DTypeError(f"{op}: expected floating logits, got {logits.dtype.name}")
    if eps != 1e-10:
        warnings.warn(f"{op}: eps is deprecated and has no effect", DeprecationWarning,
                      stacklevel=2)
    # the noise drawn in float32 at least (a bfloat16 u is 0 once in 256 draws), and the
    # Exponential(1) sample -log(1 - u) kept above 0: its log would be -inf, the softmax NaN
    wide = logits.dtype if logits.dtype.itemsize >= 4 else dtypes.float32
    u = rand(logits.shape, generator=generator, dtype=wide, device=logits.device)
    exponential = (-(1 - u).log()).clamp(min=float(np.finfo(wide.np).tiny))
    gumbel = cast(-exponential.log(), logits.dtype)
    soft = softmax((logits + gumbel) / tau, dim)
    if not hard:
        return soft
    flat = soft.detach().reshape((1,)) if soft.ndim == 0 else soft.detach()
    d = normalize_dim(dim, flat.ndim, op)
    classes = arange(flat.shape[d], device=logits.device).reshape(
        (-1,) + (1,) * (flat.ndim - d - 1))
    one_hot = cast(flat.argmax(d, keepdim=True) == classes, soft.dtype).reshape(soft.shape)
    return one_hot - soft.detach() + soft
