"""The ops DTensors support, with PyTorch's sharding propagation: each rule picks the
placements its operands must have and the placements of the result, then computes with the
ordinary op on the local tensors, so gradients need no new rules. Where the operands do not
line up, the rule redistributes them as PyTorch does rather than raising: a ``Replicate``
operand is chunked to match a shard (free), a ``Partial`` one is reduced before an op that
is not linear in it, and a shard the op needs whole is gathered.

* pointwise ops (``ember.ops.unary``, ``relu``/``gelu``/``silu``; ``add``/``sub``/``mul``/
  ``div`` with broadcasting): shards follow the first operand sharded along a dimension it
  does not broadcast; ``Partial`` stays only where the op is linear in it (``P + P``,
  ``P * R``, ``P / R``; ``P + 1`` reduces first, as PyTorch);
* ``matmul``, ``F.linear``: ``Shard(k) @ Shard(k) → Partial`` (also from ``Shard(k) @ R``
  and ``R @ Shard(k)``, the replicated operand chunked), ``Replicate @ Shard(n) → Shard``,
  ``Shard(m) @ Replicate → Shard``, batch dimensions sharded alike, ``Partial @ R``; other
  pairs gather the second operand (then the first);
* ``sum``/``mean``: a reduced sharded dimension becomes ``Partial``;
* ``view``/``reshape`` keeping the sharded dimensions, or merging one with the unsharded
  ones after it where the pieces line up (else ``reshape`` gathers it, ``view`` raises),
  ``transpose``/``permute``/``t``;
* ``softmax``/``log_softmax`` and ``layer_norm``: the normalized dimensions gathered;
* ``F.embedding`` with the table sharded by rows (a ``Partial`` lookup), by columns, or the
  indices sharded.

:mod:`~ember.distributed.tensor.tensor_ops` (``cat``, ``stack``, indexing, ``where``,
``*_like``), :mod:`~ember.distributed.tensor.random` (``dropout``),
:mod:`~ember.distributed.tensor.attention` and
:mod:`~ember.distributed.tensor.parallel.loss` add more rules. Any other op raises
:class:`~ember.distributed.tensor.dtensor.UnsupportedShardingError` naming the op and the
placements, with a hint: no silent wrong answer.

A rank's local gradient of a ``Replicate`` operand is a partial sum where the result is
sharded or partial on that mesh dimension (a partial mean where it is ``Partial("avg")``);
such operands pass through :func:`~ember.distributed.functional.copy_to_group`'s primitive,
whose backward all-reduces (with the mean for ``Partial("avg")``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ember.ops.unary as unary
from ember.distributed.functional import CopyToGroup
from ember.distributed.tensor.dtensor import DTensor, UnsupportedShardingError
from ember.distributed.tensor.placement import Partial, Placement, Replicate, Shard, chunk_bounds
from ember.distributed.tensor.redistribute import local_bounds, local_shape, redistribute_local
from ember.distributed.tensor_parallel import masked_lookup
from ember.errors import DTypeError
from ember.ops import arithmetic as arith
from ember.ops import reduce as reductions
from ember.ops.activations import gelu, relu, silu
from ember.ops.broadcast import broadcast_shapes
from ember.ops.convert import clone
from ember.ops.dims import normalize_dim, reduce_dims
from ember.ops.embedding import embedding
from ember.ops.layer_norm import layer_norm
from ember.ops.linalg import matmul, matmul_shape
from ember.ops.linear import linear
from ember.ops.overrides import register
from ember.ops.primitive import apply
from ember.ops.shape import (
    flatten,
    permute,
    read_sizes,
    reshape,
    squeeze,
    squeezed_shape,
    transpose,
    unsqueeze,
    unsqueezed_shape,
)
from ember.ops.softmax import log_softmax, softmax
from ember.ops.transposes import t
from ember.tensor import Tensor

__all__: list[str] = []

RULES: dict[Callable, Callable] = {}


def rule(*ops: Callable) -> Callable:
    def bind(impl: Callable) -> Callable:
        for op in ops:
            RULES[op] = impl
        return impl
    return bind


def _handle(op: Callable, args: tuple, kwargs: dict) -> Any:
    impl = RULES.get(op)
    if impl is None and getattr(op, "__module__", "") == unary.__name__:
        impl = _unary
    if impl is None:
        raise no_rule(op.__name__, args, "no sharding rule is registered for it")
    return impl(op, *args, **kwargs)


register(DTensor, _handle)


def no_rule(op: str, operands: Sequence[Any], why: str) -> UnsupportedShardingError:
    """The error for DTensor operands an op cannot take."""
    seen = ", ".join(f"{tuple(x.shape)} {list(x.placements)}" if isinstance(x, DTensor)
                     else type(x).__name__ for x in operands
                     if isinstance(x, (DTensor, Tensor)))
    return UnsupportedShardingError(
        f"{op}: no sharding rule for DTensor operands {seen}: {why}. Hint: redistribute() "
        "the operands (e.g. to Replicate()) or compute on .full_tensor()")


def dtensors(op: str, operands: Sequence[Any]) -> list[DTensor]:
    """The DTensor operands, all on one mesh; ordinary tensors among them are an error."""
    found = [x for x in operands if isinstance(x, DTensor)]
    if any(isinstance(x, Tensor) for x in operands):
        raise no_rule(op, operands, "DTensors cannot be mixed with ordinary tensors (make "
                      "them DTensors with DTensor.from_local)")
    mesh = found[0].device_mesh
    if any(x.device_mesh is not mesh and x.device_mesh._ranks.tolist() != mesh._ranks.tolist()
           for x in found):
        raise no_rule(op, operands, "the operands are on different device meshes")
    return found


def compute(inputs: Sequence[DTensor], targets: Sequence[Sequence[Placement]],
             out: Sequence[Placement], shape: Sequence[int], fn: Callable) -> DTensor:
    """Redistributes each input to its target placements, calls ``fn`` on the local
    tensors and wraps its result with the placements ``out`` and global ``shape``."""
    mesh = inputs[0].device_mesh
    local = []
    for x, target in zip(inputs, targets):
        t = redistribute_local(x._local_tensor, mesh, x.shape, x.placements, tuple(target))
        if t.requires_grad:
            for m, (p, o) in enumerate(zip(target, out)):
                if p.is_replicate() and not o.is_replicate():
                    t = apply(CopyToGroup, t, group=mesh.get_group(m), op=_grad_reduction(o))
        local.append(t)
    return DTensor(fn(*local), mesh, out, shape)


def _grad_reduction(out: Placement) -> str:
    """How the ranks' local gradients of a replicated operand combine when the result is
    ``out``: the terms of an average contribute their mean, all else its sum."""
    return "mean" if isinstance(out, Partial) and out.reduce_op == "avg" else "sum"


def fill(operands: Sequence[Any], local: Sequence[Tensor]) -> list[Any]:
    """``operands`` with each DTensor replaced by the next of ``local``."""
    it = iter(local)
    return [next(it) if isinstance(x, DTensor) else x for x in operands]


# -- pointwise ---------------------------------------------------------------------------------
def unsharded(placements: Sequence[Placement], dims: Sequence[int] = ()) -> list[Placement]:
    """``placements`` with ``Partial`` and ``Shard`` of ``dims`` made ``Replicate``: what an op
    that is not linear, or that needs ``dims`` whole, redistributes its input to (PyTorch
    redistributes rather than raising)."""
    return [Replicate() if p.is_partial() or (isinstance(p, Shard) and p.dim in dims) else p
            for p in placements]


def _unary(op: Callable, input: DTensor, **kwargs: Any) -> DTensor:
    places = unsharded(input.placements)
    return compute([input], [places], places, input.shape, lambda x: op(x, **kwargs))


rule(relu, gelu, silu)(_unary)

#: the operand positions in which each op is linear (where Partial terms pass through)
LINEAR_IN = {"add": (0, 1), "sub": (0, 1), "mul": (0, 1), "div": (0,)}


@rule(arith.add, arith.sub, arith.mul, arith.div, arith.pow)
def _binary(op: Callable, input: Any, other: Any, **kwargs: Any) -> DTensor:
    return pointwise(op.__name__, [input, other], lambda *t: op(*t, **kwargs))


def pointwise(name: str, operands: list[Any], fn: Callable) -> DTensor:
    """An elementwise op ``fn`` on ``operands`` (DTensors and numbers, broadcast together),
    linear in the positions ``LINEAR_IN[name]`` (none if absent)."""
    inputs = dtensors(name, operands)
    shape = broadcast_shapes(*(x.shape for x in inputs))
    targets = [list(x.placements) for x in inputs]
    out = [pointwise_placement(name, operands, inputs, targets, m, len(shape))
           for m in range(inputs[0].device_mesh.ndim)]
    return compute(inputs, targets, out, shape, lambda *t: fn(*fill(operands, t)))


def pointwise_placement(name: str, operands: list[Any], inputs: list[DTensor],
                         targets: list[list[Placement]], m: int, ndim: int) -> Placement:
    """The result's placement on mesh dimension ``m``; ``targets`` updated for the operands
    to redistribute. Shards follow the first operand sharded along a dimension it does not
    broadcast (the others are chunked or gathered to match, as PyTorch redistributes);
    ``Partial`` terms pass through where the op is linear in them, else are reduced."""
    sharded = [ndim - x.ndim + t[m].dim for x, t in zip(inputs, targets)
               if isinstance(t[m], Shard)]
    full = [d for d in sharded if _size_at(inputs, ndim, d) != 1 and
            all(x.shape[d - ndim + x.ndim] != 1 for x, t in zip(inputs, targets)
                if t[m] == Shard(d - ndim + x.ndim))]
    if full:
        dim = full[0]
        for x, target in zip(inputs, targets):
            own = dim - (ndim - x.ndim)
            target[m] = Shard(own) if own >= 0 and x.shape[own] != 1 else Replicate()
        return Shard(dim)
    for target in targets:  # a sharded size-1 dimension that broadcasts: gathered
        if isinstance(target[m], Shard):
            target[m] = Replicate()
    where = [i for i, x in enumerate(operands) if isinstance(x, DTensor)]
    partial = [(i, t) for i, t in zip(where, targets) if t[m].is_partial()]
    if not partial:
        return Replicate()
    kept = _partial_kept(name, operands, {t[m] for _, t in partial}, [i for i, _ in partial])
    for _, target in partial[len(kept):]:
        target[m] = Replicate()
    if not kept:
        return Replicate()
    p = partial[0][1][m]
    if name in ("add", "sub"):
        for target in targets:
            target[m] = p  # Replicate → Partial: its share of the value
    return p


def _partial_kept(name: str, operands: list[Any], kinds: set[Placement],
                  positions: list[int]) -> list[int]:
    """The Partial operands (positions, a prefix of ``positions``) that stay Partial; the
    others are reduced first."""
    linear = LINEAR_IN.get(name, ())
    if len(kinds) > 1 or not set(positions) & set(linear):
        return []
    if name in ("add", "sub"):  # adding a number to every rank's term adds it once per rank
        return [] if any(not isinstance(x, DTensor) for x in operands) else positions
    if name == "mul":
        return positions[:1]  # a product of sums is not the sum of the products
    return positions[:1] if positions[0] in linear else []  # div: the numerator only


def _size_at(inputs: list[DTensor], ndim: int, dim: int) -> int:
    """The broadcast size of result dimension ``dim``."""
    return max(x.shape[dim - (ndim - x.ndim)] for x in inputs if dim - (ndim - x.ndim) >= 0)


# -- matmul ------------------------------------------------------------------------------------
@rule(matmul)
def _matmul(op: Callable, input: DTensor, other: DTensor) -> DTensor:
    a, b = dtensors("matmul", [input, other])
    if a.ndim < 2 or b.ndim < 2:
        raise no_rule("matmul", [a, b], "1-d operands are not supported (unsqueeze them)")
    shape = matmul_shape(tuple(a.shape), tuple(b.shape))  # global sizes: every rank raises
    ta, tb, out = list(a.placements), list(b.placements), []
    for m in range(a.device_mesh.ndim):
        if isinstance(ta[m], Shard) and ta[m].dim == a.ndim - 1 and tb[m].is_replicate():
            tb[m] = Shard(b.ndim - 2)  # Shard(k) @ Replicate: chunk the other (free)
        elif ta[m].is_replicate() and isinstance(tb[m], Shard) and tb[m].dim == b.ndim - 2:
            ta[m] = Shard(a.ndim - 1)
        placement = _matmul_placement(a, b, ta[m], tb[m], shape)
        if placement is None and not tb[m].is_replicate():
            tb[m] = Replicate()  # gather the second operand, as PyTorch would one of them
            placement = _matmul_placement(a, b, ta[m], tb[m], shape)
        if placement is None:
            ta[m] = Replicate()
            placement = _matmul_placement(a, b, ta[m], tb[m], shape)
        if isinstance(placement, Shard):  # a batch dimension: the other operand chunked
            r = placement.dim - len(shape)
            for x, t in ((a, ta), (b, tb)):
                if t[m].is_replicate() and x.ndim + r >= 0 and x.shape[r] != 1 and r < -2:
                    t[m] = Shard(x.ndim + r)
        out.append(placement)
    return compute([a, b], [ta, tb], out, shape, matmul)


def _matmul_placement(a: DTensor, b: DTensor, pa: Placement, pb: Placement,
                      shape: Sequence[int]) -> Placement | None:
    """The placement of ``a @ b`` on one mesh dimension where they are ``pa``, ``pb``, or
    None when these do not line up (``Shard(k) @ Shard(k)``, ``Shard(m) @ Replicate``,
    ``Replicate @ Shard(n)``, a sharded batch dimension and ``Partial @ Replicate`` do)."""
    n = len(shape)
    ra = pa.dim - a.ndim if isinstance(pa, Shard) else None  # from the end: -1 = last
    rb = pb.dim - b.ndim if isinstance(pb, Shard) else None
    if ra is None and rb is None:
        if pa.is_partial() and pb.is_partial():
            return None
        return pa if pa.is_partial() else pb
    if pa.is_partial() or pb.is_partial():
        return None
    if ra == -1 and rb == -2:
        return Partial()
    if ra == -2 and rb is None:
        return Shard(n - 2)
    if ra is None and rb == -1:
        return Shard(n - 1)
    if _batch(ra, rb) or _batch(rb, ra):
        r = ra if ra is not None else rb
        if shape[r] != 1 and any(rx is not None and x.shape[rx] == 1
                                 for x, rx in ((a, ra), (b, rb))):
            return None  # a size-1 batch dimension that broadcasts
        return Shard(n + r)
    return None


def _batch(r: int | None, other: int | None) -> bool:
    """Whether ``r`` (a sharded dim, counted from the end) is a batch dimension the other
    operand shards alike or not at all."""
    return r is not None and r < -2 and other in (r, None)


@rule(linear)
def _linear(op: Callable, input: DTensor, weight: Any, bias: Any = None) -> DTensor:
    if not isinstance(weight, DTensor) or weight.ndim != 2:
        raise no_rule("linear", [input, weight], "the weight must be a 2-d DTensor")
    y = matmul(input, transpose(weight, 0, 1))
    return y if bias is None else arith.add(y, bias)


# -- reductions --------------------------------------------------------------------------------
@rule(reductions.sum)
def _sum(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> DTensor:
    dims = reduce_dims(input, dim, "sum")
    out = []
    for p in input.placements:
        if isinstance(p, Shard):
            gone = sum(d < p.dim for d in dims)
            out.append(Partial() if p.dim in dims else Shard(p.dim - (0 if keepdim else gone)))
        else:
            out.append(p)
    shape = [1 if d in dims else s for d, s in enumerate(input.shape)
             if keepdim or d not in dims]
    return compute([input], [input.placements], out, shape,
                    lambda x: reductions.sum(x, dim, keepdim, dtype=dtype))


@rule(reductions.mean)
def _mean(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False, *,
          dtype: Any = None) -> DTensor:
    dims = reduce_dims(input, dim, "mean")
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise DTypeError(f"mean: input dtype {input.dtype.name} is not floating point, so the "
                         "mean's dtype cannot be inferred. Hint: call .float() on the input "
                         "or pass dtype=ember.float32")
    count = 1
    for d in dims:
        count *= input.shape[d]
    return arith.div(_sum(reductions.sum, input, dim, keepdim, dtype=dtype), count)


@rule(reductions.amax, reductions.amin)
def _extremum(op: Callable, input: DTensor, dim: Any = (), keepdim: bool = False) -> DTensor:
    """``amax``/``amin``: a reduced dimension that is sharded is gathered first (PyTorch keeps a
    ``Partial(max)``; the values are the same), a ``Partial`` input reduced; the other shards
    are kept and renumbered."""
    dims = reduce_dims(input, dim, op.__name__)
    return gathered_reduction(input, dims, keepdim, lambda x: op(x, dim, keepdim))


def gathered_reduction(input: DTensor, dims: Sequence[int], keepdim: bool,
                       fn: Callable) -> DTensor:
    """``fn`` (a reduction over ``dims``) on the local tensors once the ``dims`` that are
    sharded are gathered and a ``Partial`` input reduced; the other shards are renumbered."""
    places = unsharded(input.placements, dims)
    out = [Shard(p.dim - (0 if keepdim else sum(d < p.dim for d in dims)))
           if isinstance(p, Shard) else p for p in places]
    shape = [1 if d in dims else s for d, s in enumerate(input.shape)
             if keepdim or d not in dims]
    return compute([input], [places], out, shape, fn)


# -- shapes ------------------------------------------------------------------------------------
def permuted(x: DTensor, dims: Sequence[int], fn: Callable) -> DTensor:
    """``x`` with its dimensions reordered (``dims[i]`` becomes dimension ``i``) by ``fn``
    on the local tensor."""
    where = {d: i for i, d in enumerate(dims)}
    out = [Shard(where[p.dim]) if isinstance(p, Shard) else p for p in x.placements]
    return compute([x], [x.placements], out, [x.shape[d] for d in dims], fn)


@rule(permute)
def _permute(op: Callable, input: DTensor, *dims: int) -> DTensor:
    """``dims`` as ``permute`` has checked and normalized them."""
    return permuted(input, dims, lambda x: permute(x, *dims))


@rule(t)
def _t(op: Callable, input: DTensor) -> DTensor:
    return permuted(input, range(input.ndim)[::-1], t)


@rule(transpose)
def _transpose(op: Callable, input: DTensor, dim0: int, dim1: int) -> DTensor:
    d0, d1 = (normalize_dim(d, input.ndim, "transpose") for d in (dim0, dim1))
    dims = list(range(input.ndim))
    dims[d0], dims[d1] = d1, d0
    return permuted(input, dims, lambda x: transpose(x, d0, d1))


def reshaped(x: DTensor, shape: Sequence[int], op: str) -> DTensor:
    """``x`` reshaped to the global ``shape`` (one size may be -1); a sharded dimension stays
    sharded where ``shape`` keeps it (see :func:`_kept_dim`), else it is gathered first
    (``view`` raises instead)."""
    shape = list(shape)
    if shape.count(-1) == 1:
        known = 1
        for s in shape:
            known *= s if s != -1 else 1
        shape[shape.index(-1)] = x.numel() // known if known else 0
    total = 1
    for s in shape:
        total *= s
    if total != x.numel():
        raise RuntimeError(f"{op}: shape {tuple(shape)} is invalid for a DTensor of shape "
                           f"{tuple(x.shape)}")
    moved, target = {}, list(x.placements)
    for m, p in enumerate(x.placements):
        if isinstance(p, Shard):
            e = moved[p.dim] if p.dim in moved else _kept_dim(x, shape, m)
            if e is None and op == "view":
                raise no_rule(op, [x], f"the target shape {tuple(shape)} splits or merges the "
                              f"sharded dimension {p.dim} (view never copies; reshape "
                              "gathers it)")
            if e is None:
                target[m] = Replicate()  # gathered first, as PyTorch's reshape does
            else:
                moved[p.dim] = e
    out = [Shard(moved[p.dim]) if isinstance(p, Shard) else p for p in target]
    piece = local_shape(shape, x.device_mesh, out)
    return compute([x], [target], out, shape, lambda t: t.reshape(piece))


def _kept_dim(x: DTensor, after: Sequence[int], m: int) -> int | None:
    """The dimension of ``after`` that keeps the shard of mesh dimension ``m``, if one does:
    the sharded dimension with the same elements in front of it, either whole or merged with
    the unsharded dimensions after it where the pieces still line up (``flatten`` of a
    row-sharded matrix whose rows split evenly, as PyTorch keeps)."""
    before, dim = x.shape, x.placements[m].dim
    front = 1
    for s in before[:dim]:
        front *= s
    acc = 1
    for e, s in enumerate(after):
        if acc == front and (s == before[dim] or _merged_in_line(x, m, s)):
            return e
        acc *= s
    return None


def _merged_in_line(x: DTensor, m: int, size: int) -> bool:
    """Whether ``x``'s dimension sharded on mesh dimension ``m`` (only), merged with the
    unsharded dimensions after it into one of ``size``, has pieces that are ``torch.chunk``
    pieces of the merged dimension."""
    dim = x.placements[m].dim
    merged, end = x.shape[dim], dim + 1
    while merged < size and end < x.ndim:
        merged *= x.shape[end]
        end += 1
    sharded = {p.dim for i, p in enumerate(x.placements) if isinstance(p, Shard) and i != m}
    if merged != size or end == dim + 1 or sharded & set(range(dim, end)):
        return False
    inner, n = size // x.shape[dim] if x.shape[dim] else 0, x.device_mesh.size(m)
    return all(tuple(b * inner for b in chunk_bounds(x.shape[dim], n, i)) ==
               chunk_bounds(size, n, i) for i in range(n))


# -- softmax, layer_norm, embedding ------------------------------------------------------------
@rule(softmax, log_softmax)
def _softmax(op: Callable, input: DTensor, dim: int | None = None, **kwargs: Any) -> DTensor:
    if dim is None:
        raise no_rule(op.__name__, [input], "pass dim explicitly")
    d = normalize_dim(dim, input.ndim, op.__name__)
    places = unsharded(input.placements, [d])  # normalizing along d needs it whole
    return compute([input], [places], places, input.shape, lambda x: op(x, d, **kwargs))


@rule(layer_norm)
def _layer_norm(op: Callable, input: DTensor, normalized_shape: Any, weight: Any = None,
                bias: Any = None, eps: float = 1e-5) -> DTensor:
    operands = [input, weight, bias]
    inputs = dtensors("layer_norm", operands)
    size = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    places = unsharded(input.placements, range(input.ndim - size, input.ndim))
    replicate = [Replicate()] * input.device_mesh.ndim
    targets = [places] + [replicate] * (len(inputs) - 1)
    def norm(x: Tensor, *params: Tensor) -> Tensor:
        return layer_norm(x, normalized_shape, *fill(operands[1:], params), eps)

    return compute(inputs, targets, places, input.shape, norm)


@rule(embedding)
def _embedding(op: Callable, input: Any, weight: Any, padding_idx: int | None = None,
               max_norm: float | None = None, norm_type: float = 2.0,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> DTensor:
    ids, table = dtensors("embedding", [input, weight])
    options = {"max_norm": max_norm, "norm_type": norm_type,
               "scale_grad_by_freq": scale_grad_by_freq, "sparse": sparse}
    if max_norm is not None and not all(p.is_replicate() for p in
                                        (*ids.placements, *table.placements)):
        raise no_rule("embedding", [ids, table], "max_norm renormalizes whole rows of the "
                      "table in place, so the table and the indices must be replicated")
    if scale_grad_by_freq and any(isinstance(p, Shard) for p in ids.placements):
        raise no_rule("embedding", [ids, table], "scale_grad_by_freq counts each index over "
                      "all the indices, which are sharded")
    out, rows_on = [], None
    for m, (pi, pw) in enumerate(zip(ids.placements, table.placements)):
        if pi.is_partial() or pw.is_partial() or (isinstance(pi, Shard) and
                                                  not pw.is_replicate()):
            raise no_rule("embedding", [ids, table], f"placements {pi}, {pw} on mesh "
                          f"dimension {m}")
        if pw == Shard(0):
            if rows_on is not None or scale_grad_by_freq:
                raise no_rule("embedding", [ids, table], "a row-sharded table takes one "
                              "mesh dimension and no scale_grad_by_freq")
            rows_on = m
            out.append(Partial())
        else:
            out.append(Shard(ids.ndim) if pw == Shard(1) else pi)
    shape = (*ids.shape, table.shape[1])
    if rows_on is None:
        return compute([ids, table], [ids.placements, table.placements], out, shape,
                        lambda i, w: embedding(i, w, padding_idx, **options))
    start, end = local_bounds(table.shape[0], 0, table.device_mesh, table.placements)
    pad = None if padding_idx is None else padding_idx % table.shape[0]
    return compute([ids, table], [ids.placements, table.placements], out, shape,
                    lambda i, w: masked_lookup(i, w, start, end, pad))


# -- methods -----------------------------------------------------------------------------------
def _same_placements(x: DTensor, fn: Callable) -> DTensor:
    return compute([x], [x.placements], x.placements, x.shape, fn)


@rule(reshape)
def _reshape(op: Callable, input: DTensor, *shape: Any) -> DTensor:
    return reshaped(input, read_sizes(shape), "reshape")


@rule(squeeze)
def _squeeze(op: Callable, input: DTensor, dim: Any = None) -> DTensor:
    return reshaped(input, squeezed_shape(input.shape, dim), "squeeze")


@rule(unsqueeze)
def _unsqueeze(op: Callable, input: DTensor, dim: int) -> DTensor:
    return reshaped(input, unsqueezed_shape(input.shape, dim), "unsqueeze")


@rule(clone)
def _clone(op: Callable, input: DTensor, **kwargs: Any) -> DTensor:
    return _same_placements(input, lambda x: clone(x, **kwargs))


def _bind_methods() -> None:
    table: dict[str, Callable] = {
        "__add__": lambda a, b: arith.add(a, b), "__radd__": lambda a, b: arith.add(b, a),
        "__sub__": lambda a, b: arith.sub(a, b), "__rsub__": lambda a, b: arith.sub(b, a),
        "__mul__": lambda a, b: arith.mul(a, b), "__rmul__": lambda a, b: arith.mul(b, a),
        "__truediv__": lambda a, b: arith.div(a, b), "__rtruediv__": lambda a, b: arith.div(b, a),
        "__neg__": lambda a: arith.mul(a, -1), "__matmul__": matmul,
        "__pow__": lambda a, b: arith.pow(a, b), "__rpow__": lambda a, b: arith.pow(b, a),
        "add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div, "pow": arith.pow,
        "matmul": matmul, "sum": reductions.sum, "mean": reductions.mean,
        "amax": reductions.amax, "amin": reductions.amin,
        "softmax": softmax, "log_softmax": log_softmax, "relu": relu, "transpose": transpose,
        "t": t,
        "permute": permute,
        "view": lambda a, *shape: reshaped(a, read_sizes(shape), "view"),
        "reshape": reshape, "flatten": flatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
        "contiguous": lambda a: _same_placements(a, lambda x: x.contiguous()),
        "clone": clone,
    }
    for name in ("exp", "tanh", "sigmoid", "sqrt", "abs", "log"):
        table[name] = getattr(unary, name)
    for name, fn in table.items():
        setattr(DTensor, name, fn)


_bind_methods()
