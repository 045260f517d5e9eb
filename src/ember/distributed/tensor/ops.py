"""The ops DTensors support, with PyTorch's sharding propagation: each rule picks the
placements its operands must have (redistributing them when cheap and unambiguous, as
PyTorch's strategies do) and the placements of the result, then computes with the ordinary
op on the local tensors, so gradients need no new rules.

* pointwise ops (``ember.ops.unary``, ``relu``/``gelu``/``silu``; ``add``/``sub``/``mul``/
  ``div`` with broadcasting): placements match; ``Partial`` only where the op is linear in it;
* ``matmul``, ``F.linear``: ``Shard(k) @ Shard(k) → Partial``, ``Replicate @ Shard(n) →
  Shard``, ``Shard(m) @ Replicate → Shard``, batch dimensions sharded alike;
* ``sum``/``mean``: a reduced sharded dimension becomes ``Partial``;
* ``view``/``reshape`` keeping the sharded dimensions, ``transpose``/``permute``/``t``;
* ``softmax``/``log_softmax`` and ``layer_norm`` over dimensions that are not sharded;
* ``F.embedding`` with the table sharded by rows (a ``Partial`` lookup), by columns, or the
  indices sharded.

Anything else raises :class:`~ember.distributed.tensor.dtensor.UnsupportedShardingError`
naming the op and the placements, with a hint: no silent wrong answer.

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
from ember.distributed.tensor.placement import Partial, Placement, Replicate, Shard
from ember.distributed.tensor.redistribute import local_bounds, redistribute_local
from ember.distributed.tensor_parallel import masked_lookup
from ember.errors import DTypeError
from ember.ops import arithmetic as arith
from ember.ops import reduce as reductions
from ember.ops.activations import gelu, relu, silu
from ember.ops.broadcast import broadcast_shapes
from ember.ops.dims import normalize_dim, normalize_dims
from ember.ops.embedding import embedding
from ember.ops.layer_norm import layer_norm
from ember.ops.linalg import matmul, matmul_shape
from ember.ops.linear import linear
from ember.ops.overrides import register
from ember.ops.primitive import apply
from ember.ops.shape import permute, read_sizes, t, transpose
from ember.ops.softmax import log_softmax, softmax
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


def _dtensors(op: str, operands: Sequence[Any]) -> list[DTensor]:
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


def _compute(inputs: Sequence[DTensor], targets: Sequence[Sequence[Placement]],
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


def _fill(operands: Sequence[Any], local: Sequence[Tensor]) -> list[Any]:
    """``operands`` with each DTensor replaced by the next of ``local``."""
    it = iter(local)
    return [next(it) if isinstance(x, DTensor) else x for x in operands]


# -- pointwise ---------------------------------------------------------------------------------
def _no_partial(op: str, x: DTensor) -> None:
    if any(p.is_partial() for p in x.placements):
        raise no_rule(op, [x], "the op is not linear, so it cannot act on Partial terms")


def _unary(op: Callable, input: DTensor, **kwargs: Any) -> DTensor:
    _no_partial(op.__name__, input)
    return _compute([input], [input.placements], input.placements, input.shape,
                    lambda x: op(x, **kwargs))


rule(relu, gelu, silu)(_unary)

_LINEAR_IN = {"add": (0, 1), "sub": (0, 1), "mul": (0, 1), "div": (0,)}


@rule(arith.add, arith.sub, arith.mul, arith.div)
def _binary(op: Callable, input: Any, other: Any, **kwargs: Any) -> DTensor:
    name, operands = op.__name__, [input, other]
    inputs = _dtensors(name, operands)
    shape = broadcast_shapes(*(x.shape for x in inputs))
    targets = [list(x.placements) for x in inputs]
    out: list[Placement] = []
    for m in range(inputs[0].device_mesh.ndim):
        out.append(_pointwise_placement(name, operands, inputs, targets, m, len(shape)))
    return _compute(inputs, targets, out, shape, lambda *t: op(*_fill(operands, t), **kwargs))


def _pointwise_placement(name: str, operands: list[Any], inputs: list[DTensor],
                         targets: list[list[Placement]], m: int, ndim: int) -> Placement:
    """The result's placement on mesh dimension ``m``; ``targets`` updated for operands
    to redistribute."""
    places = [x.placements[m] for x in inputs]
    shards = {ndim - x.ndim + p.dim for x, p in zip(inputs, places) if isinstance(p, Shard)}
    partial = {p for p in places if p.is_partial()}
    if shards:
        if len(shards) > 1 or partial:
            raise no_rule(name, operands, f"mesh dimension {m} has placements {places}, which "
                          "do not line up")
        dim = shards.pop()
        for i, (x, p) in enumerate(zip(inputs, places)):
            own = dim - (ndim - x.ndim)
            if own >= 0 and x.shape[own] != 1 and p.is_replicate():
                targets[i][m] = Shard(own)  # a cheap local chunk, as PyTorch proposes
            elif isinstance(p, Shard) and x.shape[own] == 1:
                raise no_rule(name, operands, f"a size-1 dimension is sharded on mesh "
                              f"dimension {m}")
        return Shard(dim)
    if not partial:
        return Replicate()
    p = partial.pop()
    linear_in = [i for i, x in enumerate(operands) if isinstance(x, DTensor)
                 and x.placements[m].is_partial()]
    if partial or not set(linear_in) <= set(_LINEAR_IN[name]):
        raise no_rule(name, operands, f"it is not linear in the Partial operands on mesh "
                      f"dimension {m} ({places})")
    if name in ("add", "sub"):
        if any(not isinstance(x, DTensor) for x in operands):
            raise no_rule(name, operands, "adding a number to Partial terms would add it "
                          "once per rank")
        for target in targets:
            target[m] = p  # Replicate → Partial: its share of the value
    elif len(linear_in) > 1:
        raise no_rule(name, operands, "a product of Partial terms is not their sum's product")
    return p


# -- matmul ------------------------------------------------------------------------------------
@rule(matmul)
def _matmul(op: Callable, input: DTensor, other: DTensor) -> DTensor:
    a, b = _dtensors("matmul", [input, other])
    if a.ndim < 2 or b.ndim < 2:
        raise no_rule("matmul", [a, b], "1-d operands are not supported (unsqueeze them)")
    shape = matmul_shape(tuple(a.shape), tuple(b.shape))  # global sizes: every rank raises
    n = len(shape)
    ta, tb, out = list(a.placements), list(b.placements), []
    for m, (pa, pb) in enumerate(zip(a.placements, b.placements)):
        ra = pa.dim - a.ndim if isinstance(pa, Shard) else None  # from the end: -1 = last
        rb = pb.dim - b.ndim if isinstance(pb, Shard) else None
        if ra is None and rb is None:
            if pa.is_partial() and pb.is_partial():
                raise no_rule("matmul", [a, b], "both operands are Partial on mesh dimension "
                              f"{m}")
            out.append(pa if pa.is_partial() else pb)
            continue
        if pa.is_partial() or pb.is_partial():
            raise no_rule("matmul", [a, b], f"Partial with Shard on mesh dimension {m}")
        if ra == -1 and rb == -2:
            out.append(Partial())
        elif ra == -2 and rb is None:
            out.append(Shard(n - 2))
        elif ra is None and rb == -1:
            out.append(Shard(n - 1))
        elif _batch(ra, rb) or _batch(rb, ra):
            r = ra if ra is not None else rb
            if shape[r] != 1 and any(rx is not None and x.shape[rx] == 1
                                     for x, rx in ((a, ra), (b, rb))):
                raise no_rule("matmul", [a, b], f"a size-1 batch dimension, which broadcasts "
                              f"to {shape[r]}, is sharded on mesh dimension {m}")
            for x, t, rx in ((a, ta, ra), (b, tb, rb)):
                if rx is None and x.ndim + r >= 0 and x.shape[r] != 1:
                    t[m] = Shard(x.ndim + r)  # a cheap local chunk of the other batch
            out.append(Shard(n + r))
        else:
            raise no_rule("matmul", [a, b], f"placements {pa}, {pb} on mesh dimension {m} do "
                          "not line up (Shard(k) @ Shard(k), Shard(m) @ Replicate, Replicate "
                          "@ Shard(n) or a sharded batch dimension are)")
    return _compute([a, b], [ta, tb], out, shape, matmul)


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
    dims = normalize_dims(dim, input.ndim, "sum")
    out = []
    for p in input.placements:
        if isinstance(p, Shard):
            gone = sum(d < p.dim for d in dims)
            out.append(Partial() if p.dim in dims else Shard(p.dim - (0 if keepdim else gone)))
        else:
            out.append(p)
    shape = [1 if d in dims else s for d, s in enumerate(input.shape)
             if keepdim or d not in dims]
    return _compute([input], [input.placements], out, shape,
                    lambda x: reductions.sum(x, dim, keepdim, dtype=dtype))


@rule(reductions.mean)
def _mean(op: Callable, input: DTensor, dim: Any = None, keepdim: bool = False, *,
          dtype: Any = None) -> DTensor:
    dims = normalize_dims(dim, input.ndim, "mean")
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise DTypeError(f"mean: input dtype {input.dtype.name} is not floating point, so the "
                         "mean's dtype cannot be inferred. Hint: call .float() on the input "
                         "or pass dtype=ember.float32")
    count = 1
    for d in dims:
        count *= input.shape[d]
    return arith.div(_sum(reductions.sum, input, dim, keepdim, dtype=dtype), count)


# -- shapes ------------------------------------------------------------------------------------
def permuted(x: DTensor, dims: Sequence[int], fn: Callable) -> DTensor:
    """``x`` with its dimensions reordered (``dims[i]`` becomes dimension ``i``) by ``fn``
    on the local tensor."""
    where = {d: i for i, d in enumerate(dims)}
    out = [Shard(where[p.dim]) if isinstance(p, Shard) else p for p in x.placements]
    return _compute([x], [x.placements], out, [x.shape[d] for d in dims], fn)


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
    """``x`` reshaped to the global ``shape`` (one size may be -1), which must keep each
    sharded dimension whole, with the same elements before it."""
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
    moved, local_shape = {}, list(shape)
    for p in x.placements:
        if isinstance(p, Shard) and p.dim not in moved:
            e = _same_dim(x.shape, shape, p.dim)
            if e is None:
                raise no_rule(op, [x], f"the target shape {tuple(shape)} splits or merges the "
                              f"sharded dimension {p.dim}")
            moved[p.dim] = e
            local_shape[e] = x._local_tensor.shape[p.dim]
    out = [Shard(moved[p.dim]) if isinstance(p, Shard) else p for p in x.placements]
    return _compute([x], [x.placements], out, shape, lambda t: t.reshape(local_shape))


def _same_dim(before: Sequence[int], after: Sequence[int], dim: int) -> int | None:
    """The dimension of ``after`` that is dimension ``dim`` of ``before``, if one is (the
    same size with the same number of elements in front of it)."""
    front = 1
    for s in before[:dim]:
        front *= s
    acc = 1
    for e, s in enumerate(after):
        if acc == front and s == before[dim]:
            return e
        acc *= s
    return None


# -- softmax, layer_norm, embedding ------------------------------------------------------------
@rule(softmax, log_softmax)
def _softmax(op: Callable, input: DTensor, dim: int | None = None, **kwargs: Any) -> DTensor:
    if dim is None:
        raise no_rule(op.__name__, [input], "pass dim explicitly")
    d = normalize_dim(dim, input.ndim, op.__name__)
    _no_partial(op.__name__, input)
    if Shard(d) in input.placements:
        raise no_rule(op.__name__, [input], f"dim {d}, along which it normalizes, is sharded")
    return _compute([input], [input.placements], input.placements, input.shape,
                    lambda x: op(x, d, **kwargs))


@rule(layer_norm)
def _layer_norm(op: Callable, input: DTensor, normalized_shape: Any, weight: Any = None,
                bias: Any = None, eps: float = 1e-5) -> DTensor:
    operands = [input, weight, bias]
    inputs = _dtensors("layer_norm", operands)
    size = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    _no_partial("layer_norm", input)
    if any(isinstance(p, Shard) and p.dim >= input.ndim - size for p in input.placements):
        raise no_rule("layer_norm", operands, "a normalized dimension is sharded")
    replicate = [Replicate()] * input.device_mesh.ndim
    targets = [input.placements] + [replicate] * (len(inputs) - 1)
    def norm(x: Tensor, *params: Tensor) -> Tensor:
        return layer_norm(x, normalized_shape, *_fill(operands[1:], params), eps)

    return _compute(inputs, targets, input.placements, input.shape, norm)


@rule(embedding)
def _embedding(op: Callable, input: Any, weight: Any, padding_idx: int | None = None,
               max_norm: float | None = None, norm_type: float = 2.0,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> DTensor:
    ids, table = _dtensors("embedding", [input, weight])
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
        return _compute([ids, table], [ids.placements, table.placements], out, shape,
                        lambda i, w: embedding(i, w, padding_idx, **options))
    start, end = local_bounds(table.shape[0], 0, table.device_mesh, table.placements)
    pad = None if padding_idx is None else padding_idx % table.shape[0]
    return _compute([ids, table], [ids.placements, table.placements], out, shape,
                    lambda i, w: masked_lookup(i, w, start, end, pad))


# -- methods -----------------------------------------------------------------------------------
def _same_placements(x: DTensor, fn: Callable) -> DTensor:
    return _compute([x], [x.placements], x.placements, x.shape, fn)


def _bind_methods() -> None:
    table: dict[str, Callable] = {
        "__add__": lambda a, b: arith.add(a, b), "__radd__": lambda a, b: arith.add(b, a),
        "__sub__": lambda a, b: arith.sub(a, b), "__rsub__": lambda a, b: arith.sub(b, a),
        "__mul__": lambda a, b: arith.mul(a, b), "__rmul__": lambda a, b: arith.mul(b, a),
        "__truediv__": lambda a, b: arith.div(a, b), "__rtruediv__": lambda a, b: arith.div(b, a),
        "__neg__": lambda a: arith.mul(a, -1), "__matmul__": matmul,
        "add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
        "matmul": matmul, "sum": reductions.sum, "mean": reductions.mean,
        "softmax": softmax, "log_softmax": log_softmax, "relu": relu, "transpose": transpose,
        "t": t,
        "permute": permute,
        "view": lambda a, *shape: reshaped(a, read_sizes(shape), "view"),
        "reshape": lambda a, *shape: reshaped(a, read_sizes(shape), "reshape"),
        "contiguous": lambda a: _same_placements(a, lambda x: x.contiguous()),
        "clone": lambda a: _same_placements(a, lambda x: x.clone()),
    }
    for name in ("exp", "tanh", "sigmoid", "sqrt", "abs", "log"):
        table[name] = getattr(unary, name)
    for name, fn in table.items():
        setattr(DTensor, name, fn)


_bind_methods()
