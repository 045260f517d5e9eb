"""DTensor rules for the reductions and scans that are not linear: ``var``/``std``,
``norm``, ``prod``, ``max``/``min`` (whole, or with ``dim``: values and indices; of two
DTensors, ``maximum``/``minimum`` elementwise),
``argmax``/``argmin`` and ``cumsum``/``cumprod``. Each gathers the dimensions it reduces
(or scans) and reduces a ``Partial`` input first, then runs on the local tensors; the other
shards are kept (PyTorch keeps some as ``Partial``; the values are the same).

Example (``ember launch -n 2``):
    >>> d = distribute_tensor(ember.randn(4, 6), mesh, [Shard(1)])
    >>> d.var(0).placements, d.cumsum(1).placements
    ((Shard(dim=0),), (Replicate(),))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember import return_types
from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.ops import (
    compute,
    gathered_reduction,
    pointwise,
    rule,
    unsharded,
)
from ember.ops.dims import normalize_dims, reduce_dims
from ember.ops.norms import norm
from ember.ops.reduce import argmax, argmin, max, min, prod  # noqa: A004
from ember.ops.scan import cumprod, cumsum
from ember.ops.select import maximum, minimum
from ember.ops.variance import std, var
from ember.tensor import Tensor

__all__: list[str] = []


@rule(var, std)
def _spread(op: Callable, input: DTensor, dim: Any = None, unbiased: Any = None,
            keepdim: bool = False, *, correction: Any = None) -> DTensor:
    if isinstance(dim, bool):  # var(input, unbiased): PyTorch's overload, as the local op reads
        unbiased, dim = dim, None
    dims = reduce_dims(input, dim, op.__name__)
    return gathered_reduction(input, dims, keepdim, lambda x: op(
        x, dim, unbiased, keepdim, correction=correction))


@rule(norm)
def _norm(op: Callable, input: DTensor, p: Any = "fro", dim: Any = None,
          keepdim: bool = False, dtype: Any = None) -> DTensor:
    dims = reduce_dims(input, dim, "norm")
    return gathered_reduction(input, dims, keepdim, lambda x: op(x, p, dim, keepdim, dtype))


@rule(prod)
def _prod(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False, *,
          dtype: Any = None) -> DTensor:
    dims = normalize_dims(dim, input.ndim, "prod")
    return gathered_reduction(input, dims, keepdim, lambda x: op(x, dim, keepdim, dtype=dtype))


@rule(argmax, argmin)
def _arg(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False) -> DTensor:
    dims = normalize_dims(dim, input.ndim, op.__name__)
    return gathered_reduction(input, dims, keepdim, lambda x: op(x, dim, keepdim))


@rule(max, min)
def _extreme(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The whole tensor's extreme, or ``(values, indices)`` along ``dim`` (global indices:
    the dimension is gathered); ``max(a, b)`` with a tensor ``b`` is elementwise
    (``maximum``: the core op hands it over here; an ordinary ``b`` is the mixing error)."""
    if isinstance(dim, (DTensor, Tensor)):
        return _elementwise(maximum if op is max else minimum, input, dim)
    if dim is None:
        return gathered_reduction(input, normalize_dims(None, input.ndim, op.__name__),
                                  False, op)
    dims = normalize_dims(dim, input.ndim, op.__name__)
    both: list = []  # one gather and one local op give both outputs

    def local(x: Any) -> Any:
        both.extend(op(x, dim, keepdim))
        return both[0]

    values = gathered_reduction(input, dims, keepdim, local)
    indices = DTensor(both[1], values.device_mesh, values.placements, values.shape)
    return getattr(return_types, op.__name__)((values, indices))


@rule(maximum, minimum)
def _elementwise(op: Callable, input: Any, other: Any) -> DTensor:
    return pointwise(op.__name__, [input, other], op)


@rule(cumsum, cumprod)
def _scan(op: Callable, input: DTensor, dim: int, *, dtype: Any = None) -> DTensor:
    (d,) = normalize_dims(dim, input.ndim, op.__name__)
    places = unsharded(input.placements, [d])
    return compute([input], [places], places, input.shape, lambda x: op(x, dim, dtype=dtype))


for _name in ("var", "std", "norm", "prod", "argmax", "argmin", "max", "min", "maximum",
              "minimum", "cumsum", "cumprod"):
    setattr(DTensor, _name, getattr(ember, _name))
