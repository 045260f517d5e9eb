"""Sharding rules for the tensor-manipulating ops (PyTorch's ``_tensor_ops``): joining
(``cat``, ``stack``), basic indexing, ``where`` and the ``*_like`` factories.

* ``cat``/``stack``: on each mesh dimension every operand takes the first shard any of them
  has (a shard of the joined dimension is gathered), else the first ``Partial`` (joining is
  linear), else ``Replicate``: the cheapest choice, as PyTorch's strategy picks;
* indexing with integers, slices, ``None`` and ``...``: a dimension indexed other than by
  ``:`` is gathered first where it is sharded (PyTorch redistributes likewise); tensor
  (advanced) indices have no rule;
* ``where`` and the comparisons (``==``, ``<``, …): elementwise, as ``+`` (a ``Partial``
  operand is reduced first);
* ``zeros_like``, ``ones_like``, ``empty_like``, ``full_like``: the input's placements, with
  ``Partial`` made ``Replicate`` (the values do not depend on the input; PyTorch's rule).

Example (2 ranks):
    >>> d = distribute_tensor(ember.arange(8.0).view(4, 2), mesh, [Shard(0)])
    >>> ember.cat([d, d], dim=1).placements, d[:, 1].placements, d[1:].placements
    ((Shard(dim=0),), (Shard(dim=0),), (Replicate(),))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.ops import compute, dtensors, no_rule, pointwise, rule
from ember.distributed.tensor.placement import Placement, Replicate, Shard
from ember.errors import ShapeError
from ember.ops import compare
from ember.ops.creation import empty_like, full_like, ones_like, zeros_like
from ember.ops.dims import normalize_dim
from ember.ops.join import cat, stack
from ember.ops.select import where

__all__: list[str] = []


def _joined(op: str, tensors: Sequence[Any], dim: int) -> tuple[list[DTensor], list[Placement]]:
    """The operands, checked to have one shape except along ``dim`` (None: one shape), and
    the placements they all take."""
    found = dtensors(op, tensors)
    first = found[0]
    for i, x in enumerate(found):
        if x.ndim != first.ndim or any(a != b for d, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if d != dim):
            where_ = "" if dim is None else f" except in dimension {dim}"
            raise ShapeError(f"{op}: sizes of tensors must match{where_}, got {tuple(first.shape)}"
                             f" at entry 0 and {tuple(x.shape)} at entry {i}")
    return found, [_joined_placement([x.placements[m] for x in found], dim)
                   for m in range(first.device_mesh.ndim)]


def _joined_placement(places: list[Placement], dim: int | None) -> Placement:
    """The placement the joined operands take on one mesh dimension: the first shard (not
    of ``dim``) any has, else the first ``Partial``, else ``Replicate``: a ``Replicate``
    operand is chunked or split into terms at no cost, as PyTorch's cheapest choice."""
    shards = [p for p in places if isinstance(p, Shard) and p.dim != dim]
    partial = [p for p in places if p.is_partial()]
    return shards[0] if shards else partial[0] if partial else Replicate()


@rule(cat)
def _cat(op: Callable, tensors: Sequence[Any], dim: int = 0) -> DTensor:
    first = tensors[0] if tensors else None
    if not isinstance(first, DTensor) or first.ndim == 0:
        raise no_rule("cat", list(tensors), "zero-dimensional DTensors cannot be concatenated")
    d = normalize_dim(dim, first.ndim, "cat")
    found, target = _joined("cat", tensors, d)
    shape = list(first.shape)
    shape[d] = sum(x.shape[d] for x in found)
    return compute(found, [target] * len(found), target, shape, lambda *t: cat(list(t), d))


@rule(stack)
def _stack(op: Callable, tensors: Sequence[Any], dim: int = 0) -> DTensor:
    found, target = _joined("stack", tensors, None)
    d = normalize_dim(dim, found[0].ndim + 1, "stack")
    out = [Shard(p.dim + (p.dim >= d)) if isinstance(p, Shard) else p for p in target]
    shape = [*found[0].shape[:d], len(found), *found[0].shape[d:]]
    return compute(found, [target] * len(found), out, shape, lambda *t: stack(list(t), d))


@rule(compare.eq, compare.ne, compare.lt, compare.le, compare.gt, compare.ge)
def _compare(op: Callable, input: Any, other: Any) -> DTensor:
    return pointwise(op.__name__, [input, other], op)


@rule(where)
def _where(op: Callable, condition: Any, input: Any = None, other: Any = None) -> DTensor:
    if input is None and other is None:
        raise no_rule("where", [condition], "where(condition) (nonzero) has a data-dependent "
                      "shape")
    return pointwise("where", [condition, input, other], where)


@rule(zeros_like, ones_like, empty_like, full_like)
def _like(op: Callable, input: DTensor, *args: Any, requires_grad: bool = False,
          **kwargs: Any) -> DTensor:
    local = op(input._local_tensor, *args, **kwargs)
    out = [Replicate() if p.is_partial() else p for p in input.placements]
    return DTensor(local.requires_grad_(requires_grad), input.device_mesh, out, input.shape)


# -- indexing ----------------------------------------------------------------------------------
def getitem(x: DTensor, index: Any) -> DTensor:
    """``x[index]`` for integers, slices, ``None`` and ``...``; a dimension indexed by
    anything but ``:`` is gathered first where it is sharded."""
    items = index if isinstance(index, tuple) else (index,)
    if any(not (i is None or i is Ellipsis or isinstance(i, slice) or
                (isinstance(i, int) and not isinstance(i, bool))) for i in items):
        raise no_rule("__getitem__", [x], "only integers, slices, None and ... index a DTensor "
                      "(tensor or list indices gather data-dependent elements)")
    if sum(i is Ellipsis for i in items) > 1:
        raise IndexError("__getitem__: an index can only have a single ellipsis ('...')")
    consumed = sum(i is not None and i is not Ellipsis for i in items)
    if consumed > x.ndim:
        raise IndexError(f"__getitem__: too many indices for a DTensor of dimension {x.ndim}")
    if Ellipsis not in items:
        items = (*items, Ellipsis)
    at = items.index(Ellipsis)
    items = (*items[:at], *[slice(None)] * (x.ndim - consumed), *items[at + 1:])
    moved, touched, shape, d = {}, set(), [], 0
    for i in items:
        if i is None:
            shape.append(1)
            continue
        size = x.shape[d]
        if isinstance(i, int):
            if not -size <= i < size:
                raise IndexError(f"__getitem__: index {i} is out of bounds for dimension {d} "
                                 f"with size {size}")
            touched.add(d)
        else:
            if i.indices(size) != (0, size, 1):
                touched.add(d)
            moved[d] = len(shape)
            shape.append(len(range(*i.indices(size))))
        d += 1
    target = [Replicate() if isinstance(p, Shard) and p.dim in touched else p
              for p in x.placements]
    out = [Shard(moved[p.dim]) if isinstance(p, Shard) else p for p in target]
    return compute([x], [target], out, shape, lambda t: t[index])


DTensor.__getitem__ = getitem
DTensor.where = lambda self, condition, other: where(condition, self, other)
for _op in (compare.eq, compare.ne, compare.lt, compare.le, compare.gt, compare.ge):
    setattr(DTensor, _op.__name__, _op)
    if _op.__name__ not in ("eq", "ne"):  # (DTensor defines __eq__, __ne__ and __hash__)
        setattr(DTensor, f"__{_op.__name__}__", _op)
