"""Writes through an index: ``index_put`` (``x[i] = v``, ``scatter``, ``index_add``,
``index_fill``, ``one_hot``, ``max_unpool``; constant padding as Pad) and ``scatter_reduce``,
as ScatterND. Index tensors are broadcast together, stacked on a last axis and made
non-negative; a write after a basic index (``x[0, i] = v``) goes into the slice, which is
then written back at its flat positions (distinct, so the order of the writes is moot)."""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.jit.ir import Eqn, Var
from ember.onnx.context import Context
from ember.onnx.converters.indexing import sliced
from ember.onnx.registry import converter

_REDUCTION = {"set": "none", "add": "add", "multiply": "mul", "prod": "mul", "amax": "max",
              "amin": "min"}


@converter("index_put", shape_params=True)
def index_put(ctx: Context, eqn: Eqn) -> str | None:
    """``a[basic][index tensors at dims] = v`` (or ``+=``, ``*=``): ScatterND; padding with
    a constant (a filled base, ``F.pad``) is Pad."""
    pad = _as_pad(ctx, eqn)
    if pad is not None:
        return pad
    base, values, *idx = eqn.inputs
    p = eqn.params
    a = ctx.value(base)
    if not p["basic"] and idx:  # (neither: the whole tensor written, y[:] = v)
        return _scatter(ctx, a, len(base.shape), idx, p["dims"], ctx.value(values),
                        len(values.shape), _REDUCTION[p["mode"]],
                        bool(set(p["dims"]) & set(ctx.dynamic_dims(base))))
    view = sliced(ctx, eqn, "basic", a)
    view_rank = len(_basic_shape(eqn))
    if idx:
        written = _scatter(ctx, view, view_rank, idx, p["dims"], ctx.value(values),
                           len(values.shape), _REDUCTION[p["mode"]])
    else:
        v = _at_rank(ctx, ctx.value(values), len(values.shape), view_rank)
        op = {"set": "Expand", "add": "Add", "multiply": "Mul"}[p["mode"]]
        written = ctx.node(op, [v, ctx.node("Shape", [view])] if op == "Expand" else
                           [view, v])
        if op != "Expand":  # (values broadcast to the view, never the view to the values)
            written = ctx.node("Expand", [written, ctx.node("Shape", [view])])
    positions = ctx.node("Reshape", [ctx.node("Range", [
        ctx.scalar(0, dtypes.int64), ctx.node("Size", [a]), ctx.scalar(1, dtypes.int64)]),
        ctx.node("Shape", [a])])
    at = ctx.node("Unsqueeze", [sliced(ctx, eqn, "basic", positions), ctx.ints([-1])])
    flat = ctx.node("ScatterND", [ctx.node("Reshape", [a, ctx.ints([-1])]), at, written])
    return ctx.node("Reshape", [flat, ctx.node("Shape", [a])])


@converter("scatter_reduce")
def scatter_reduce(ctx: Context, eqn: Eqn) -> str | None:
    """``prod``, ``amax`` and ``amin`` (``sum`` and ``mean`` trace into ``index_put``):
    ScatterND with that reduction (max and min from opset 18); without ``include_self`` the
    positions are first set to one of their values (a product's: to 1). A NaN among a
    position's values (or its own, with ``include_self``) makes it NaN, as in Ember, where
    onnxruntime's max and min may drop it."""
    a, v, *idx = eqn.inputs
    p = eqn.params
    extreme = p["reduce"] != "prod"
    if extreme and ctx.opset < 18:
        return ctx.refuse(f"scatter_reduce(reduce={p['reduce']!r}) needs ScatterND's "
                          f"max/min reduction, which ONNX has from opset 18 (exporting at "
                          f"{ctx.opset}). Hint: export with opset_version=18")
    rank = len(a.shape)
    dims = tuple(range(rank))
    out = ctx.value(a)
    if not p["include_self"]:
        first = ctx.value(v) if extreme else ctx.scalar(1, a.dtype)
        out = _scatter(ctx, out, rank, idx, dims, first, len(v.shape) if extreme else 0,
                       "none")
    out = _scatter(ctx, out, rank, idx, dims, ctx.value(v), len(v.shape),
                   _REDUCTION[p["reduce"]])
    if not extreme or not a.dtype.is_floating_point:
        return out
    nan = ctx.scalar(np.nan, a.dtype)
    nan_v = ctx.node("Where", [ctx.node("IsNaN", [ctx.value(v)]), nan,
                               ctx.scalar(0, a.dtype)])
    zeros = ctx.node("Expand", [ctx.scalar(0, a.dtype), ctx.node("Shape", [ctx.value(a)])])
    hit = _scatter(ctx, zeros, rank, idx, dims, nan_v, len(v.shape), "add")  # (NaN: a NaN went)
    mask = ctx.node("IsNaN", [hit])
    if p["include_self"]:
        mask = ctx.node("Or", [mask, ctx.node("IsNaN", [ctx.value(a)])])
    return ctx.node("Where", [mask, nan, out])


def _scatter(ctx: Context, data: str, rank: int, idx: list[Var], dims: tuple, v: str,
             v_rank: int, reduction: str, guarded: bool = False) -> str:
    """``data`` (of ``rank``) with ``v`` (of ``v_rank``, broadcast to the indexed region,
    NumPy's rules) written at the index tensors ``idx`` into dimensions ``dims``: ScatterND
    on ``data`` transposed so that ``dims`` lead. ``guarded`` (an indexed dimension of
    dynamic size): an index out of range at run time writes into one more entry, dropped
    (a traced model's EmbeddingBag run on no offsets puts every row in bag -1 of 0 bags,
    which eager's own branch leaves out; ScatterND would fail)."""
    k = len(dims)
    rest = [d for d in range(rank) if d not in dims]
    perm = [*dims, *rest]
    moved = data if perm == list(range(rank)) else ctx.node("Transpose", [data], perm=perm)
    if guarded:
        sizes = ctx.node("Shape", [moved], start=0, end=k)
        moved = ctx.node("Pad", [moved, ctx.ints([0] * rank + [1] * k + [0] * (rank - k))])
    zero, names = None, []
    int64_0 = ctx.scalar(0, dtypes.int64)
    for i, d in zip(idx, dims):  # (int64, negatives from the end)
        name = ctx.cast(ctx.value(i), i.dtype, dtypes.int64)
        size = ctx.node("Shape", [data], start=d, end=d + 1)
        name = ctx.node("Where", [ctx.node("Less", [name, int64_0]),
                                  ctx.node("Add", [name, size]), name])
        if guarded:  # (out of range: the padding entry, at ``size``)
            outside = ctx.node("Or", [ctx.node("Less", [name, int64_0]),
                                      ctx.node("GreaterOrEqual", [name, size])])
            name = ctx.node("Where", [outside, size, name])
        names.append(name)
        nought = ctx.node("Mul", [name, ctx.scalar(0, dtypes.int64)])
        zero = nought if zero is None else ctx.node("Add", [zero, nought])
    assert zero is not None
    b = max(len(i.shape) for i in idx)  # (the rank of the broadcast index shape)
    index_shape = ctx.node("Shape", [zero])
    stacked = ctx.node("Concat", [ctx.node("Unsqueeze", [ctx.node("Add", [n, zero]),
                                                         ctx.ints([-1])]) for n in names],
                       axis=-1)
    first = dims[0]
    adjacent = dims == tuple(range(first, first + k)) and first > 0
    if adjacent:  # (NumPy puts the index shape where the dims were, else in front)
        region = ctx.node("Concat", [ctx.node("Shape", [data], start=0, end=first),
                                     index_shape,
                                     ctx.node("Shape", [data], start=first + k)], axis=0)
    else:
        region = ctx.node("Concat", [index_shape, ctx.node("Shape", [moved], start=k)], axis=0)
    r = b + rank - k
    updates = ctx.node("Expand", [_at_rank(ctx, v, v_rank, r), region])
    if adjacent:
        updates = ctx.node("Transpose", [updates], perm=[*range(first, first + b),
                                                         *range(first), *range(first + b, r)])
    written = ctx.node("ScatterND", [moved, stacked, updates], reduction=reduction)
    if guarded:
        written = ctx.node("Slice", [written, ctx.ints([0] * k), sizes, ctx.ints(range(k))])
    if perm == list(range(rank)):
        return written
    return ctx.node("Transpose", [written], perm=[int(j) for j in np.argsort(perm)])


def _at_rank(ctx: Context, v: str, v_rank: int, rank: int) -> str:
    """``v`` (of ``v_rank``) without the leading dimensions of 1 that take it past ``rank``
    (NumPy's assignment drops them)."""
    extra = v_rank - rank
    return v if extra <= 0 else ctx.node("Squeeze", [v, ctx.ints(range(extra))])


def _basic_shape(eqn: Eqn) -> tuple[int, ...]:
    """The shape of ``a[basic]`` (at the traced sizes; only its rank is read)."""
    dummy = np.empty(eqn.inputs[0].shape, dtype=np.int8)
    return np.asarray(dummy[tuple(slice(*e) if type(e) is tuple else e
                                  for e in eqn.params["basic"])]).shape


def _pads_around(entry: tuple, size: int) -> tuple[int, int]:
    """How many entries of a dimension of ``size`` lie before and after the slice ``entry``."""
    start, stop, _ = slice(*entry).indices(size)
    return start, size - max(stop, start)


def _as_pad(ctx: Context, eqn: Eqn) -> str | None:
    """Pad, where ``eqn`` writes values into a constant of one value at fixed offsets (what
    ``F.pad`` traces into); else None."""
    base, values, *idx = eqn.inputs
    p = eqn.params
    fill = np.asarray(ctx.graph.consts.get(base, np.empty(0)))
    if idx or p["mode"] != "set" or fill.size == 0 or not (fill == fill.flat[0]).all() or \
            len(p["basic"]) != len(base.shape) or \
            any(type(e) is not tuple or (e[2] or 1) != 1 for e in p["basic"]):
        return None
    twin = ctx.twin_eqns.get(id(eqn), eqn)
    begins, ends = [], []
    for d, (entry, size) in enumerate(zip(p["basic"], base.shape)):
        pads = _pads_around(entry, size)
        if pads != _pads_around(twin.params["basic"][d], ctx.twin_shape(base)[d]):
            return None
        begins.append(pads[0])
        ends.append(pads[1])
    if values.shape != tuple(size - b - e for size, b, e in zip(base.shape, begins, ends)):
        return None
    on = dtypes.int32 if base.dtype.name == "int16" else base.dtype  # (no int16 Pad in ORT)
    padded = ctx.cast(ctx.node("Pad", [ctx.cast(ctx.value(values), values.dtype, on),
                                       ctx.ints(begins + ends), ctx.scalar(fill.flat[0], on)],
                               mode="constant"), on, base.dtype)
    ctx.register_dims(eqn.outputs[0], padded, {d: ("pad", ctx.sizes(values, d), b + e)
                                               for d, (b, e) in enumerate(zip(begins, ends))})
    return padded
