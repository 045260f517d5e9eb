"""Indexing: basic slices, gathers (``index``, ``gather``/``take_along_dim`` patterns,
``embedding``) and writes through views (``view_scatter``); writes through an index are in
:mod:`ember.onnx.converters.scatter`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes
from ember.jit.ir import Eqn, Var
from ember.onnx.context import INT64_MAX, INT64_MIN, Context
from ember.onnx.registry import converter
from ember.ops.pad import flat_positions


def _entry_value(ctx: Context, eqn: Eqn, key: str, k: int, part: int | None, d: int) -> \
        int | str | None:
    """Entry ``k`` of the equation's ``params[key]`` (``part`` of a ``(start, stop,
    step)`` entry) for dimension ``d`` of the first input, made relative to the end where it
    moves with a dynamic size (a stop at the end: INT64_MAX), or computed from the one dynamic
    input size it is a multiple of (a tensor name: :func:`_multiple`); an entry that moves in
    another way is refused."""
    entry = eqn.params[key][k]
    value = entry if part is None else entry[part]
    twin = ctx.twin_eqns.get(id(eqn))
    if twin is None:
        return value
    other = twin.params[key][k]
    other = other if part is None else other[part]
    if other == value:
        return value
    size, twin_size = eqn.inputs[0].shape[d], ctx.twin_shape(eqn.inputs[0])[d]
    if value is not None and other is not None and value - size == other - twin_size:
        return value - size if value != size else INT64_MAX
    multiple, why = (None, "") if value is None or other is None else \
        _multiple(ctx, value, other, size, twin_size,
                  lambda pairs: _entry_in(pairs[id(eqn)].params[key][k], part))
    if multiple is None:
        ctx.refuse(f"the index {entry} moves with a dynamic size in a way ONNX "
                   f"export cannot follow{why}")
        return value
    return multiple


def _entry_in(entry: Any, part: int | None) -> int | None:
    return entry if part is None else entry[part]


def _multiple(ctx: Context, value: int, other: int, size: int, twin_size: int,
              entry_in: Callable[[dict[int, Eqn]], int | None]) -> tuple[str | None, str]:
    """An index that is ``value`` in the traced graph and ``other`` in the resized one into a
    dimension of ``size`` (``twin_size``), as ``a·N`` where the dimension is ``c·N``, N the
    one dynamic input size (a recurrent layer's step ``t`` spans rows ``t·B`` to ``(t+1)·B``
    of its flattened time-and-batch rows), or into a dimension that does not move (a
    positional table cut to the input's length, ``pos[:x.shape[1]]``): a 1-D int64 tensor.
    ``entry_in`` reads the index in another trace from its equation pairs. Several sizes
    that explain the move (T = 8 and B = 2) are told apart by the check trace; into a fixed
    dimension the index must be ``a·N`` in the trace at small sizes too (``max(T, 4)`` is T
    in every trace above 4). None, and why, when the move is of another form."""
    static = size == twin_size
    fits = {(n, twin_n) for n, twin_n in ctx.dynamic_sizes()
            if value == value // n * n and other == value // n * twin_n and value // n != 0 and
            (static or size == size // n * n and twin_size == size // n * twin_n)}
    if len(fits) > 1 and ctx.check is not None:
        fits = {fit for fit in fits if entry_in(ctx.check[1]) ==
                value // fit[0] * _size_in(ctx, fit, ctx.check[0])}
    if len(fits) > 1:
        return None, (f" (it is a multiple of several dynamic sizes, {sorted(fits)}, in both "
                      "traces). Hint: trace with sizes that are not multiples of each other")
    if len(fits) != 1 or (not static and len(ctx.dynamic_sizes()) != 1):
        return None, ""
    (n, twin_n), = fits
    if static:
        below = ctx.below() if ctx.below is not None else None
        if below is None or entry_in(below[1]) != value // n * _size_in(ctx, (n, twin_n),
                                                                       below[0]):
            return None, (" (it follows the size at and above the traced one, not below it: "
                          "a bound clamped, max(T, 4)). Hint: export with fixed sizes")
    return ctx.node("Mul", [ctx.input_dim(n, twin_n), ctx.ints([value // n])]), ""


def _size_in(ctx: Context, fit: tuple[int, int], mapping: dict[Var, Var]) -> int:
    """The size, in another trace (``mapping`` of the graph's variables to it), of the
    inputs' dynamic dimension that is ``fit`` in the first two."""
    for var in ctx.graph.inputs:
        for d in ctx.dynamic_dims(var):
            if (var.shape[d], ctx.twin_shape(var)[d]) == fit:
                return mapping[var].shape[d]
    raise AssertionError(fit)


def _saturated(bound: int | str | None) -> int | str | None:
    """A slice bound as ONNX's int64 (Python's slices take any int; both clamp to the size)."""
    return min(max(bound, INT64_MIN), INT64_MAX) if isinstance(bound, int) else bound


@converter("slice", shape_params=True)
def slice_(ctx: Context, eqn: Eqn) -> str:
    """Ints, ``(start, stop, step)`` ranges and ``None`` (new axes): Slice, then Squeeze of
    the dimensions an int took, then Unsqueeze of the new axes."""
    x = ctx.value(eqn.inputs[0])
    out = sliced(ctx, eqn, "index", x)
    return out if out != x else ctx.node("Identity", [x])


def sliced(ctx: Context, eqn: Eqn, key: str, x: str) -> str:
    """``x`` (of the shape of the equation's first input) sliced by the basic index in
    ``eqn.params[key]``; ``x`` itself when the index takes everything."""
    twin = ctx.twin_eqns.get(id(eqn))
    if twin is not None and _form(twin.params[key]) != _form(eqn.params[key]):
        ctx.refuse(f"the index {eqn.params[key]} takes another form at other sizes of the "
                   f"dynamic axes ({twin.params[key]}): a bound computed in Python from a "
                   "shape that is 0 or the whole axis at the traced size (x[:, T // 16 * 16:] "
                   "takes every row for T below 16), which no rule over the sizes follows")
        return x
    starts, ends, axes, steps, squeeze, new_axes = [], [], [], [], [], []
    d = out = 0
    for k, entry in enumerate(eqn.params[key]):
        if entry is None:
            new_axes.append(out)
            out += 1
            continue
        if type(entry) is tuple:
            start, stop = (_saturated(_entry_value(ctx, eqn, key, k, p, d)) for p in (0, 1))
            step = _saturated(entry[2] or 1)
            if start not in (None, 0) or stop not in (None, INT64_MAX) or step != 1:
                starts.append((0 if step > 0 else INT64_MAX) if start is None else start)
                ends.append((INT64_MAX if step > 0 else INT64_MIN) if stop is None else stop)
                axes.append(d)
                steps.append(step)
            out += 1
        else:
            at = _entry_value(ctx, eqn, key, k, None, d)
            starts.append(at)
            ends.append(ctx.node("Add", [at, ctx.ints([1])]) if isinstance(at, str) else
                        at + 1 if at != -1 else INT64_MAX)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
        d += 1
    if axes:
        x = ctx.node("Slice", [x, ctx.join(starts), ctx.join(ends), ctx.ints(axes),
                               ctx.ints(steps)])
    if squeeze:
        x = ctx.node("Squeeze", [x, ctx.ints(squeeze)])
    if new_axes:
        x = ctx.node("Unsqueeze", [x, ctx.ints(new_axes)])
    return x


def _form(index: tuple) -> tuple:
    """What each entry of a basic index is (a new axis, a range, an int), without the full
    ranges at the end (an index leaves those out)."""
    kinds = [None if e is None else "range" if type(e) is tuple else "int" for e in index]
    while kinds and kinds[-1] == "range" and index[len(kinds) - 1] == (None, None, None):
        kinds.pop()
    return tuple(kinds)


@converter("index_check", shape_params=True)
def index_check(ctx: Context, eqn: Eqn) -> str:
    """A bounds check at run time in Ember: ONNX runtimes check (or clamp) themselves (so the
    size in its params may change with a dynamic axis)."""
    return ctx.value(eqn.inputs[0])


@converter("embedding")
def embedding(ctx: Context, eqn: Eqn) -> str:
    weight, indices = eqn.inputs
    return ctx.node("Gather", [ctx.value(weight), ctx.value(indices)], axis=0)


@converter("index")
def index(ctx: Context, eqn: Eqn) -> str | None:
    """``a[..., i, ...]``: Gather for one index tensor, and one after the other for an outer
    product of index vectors (``a[:, i[:, None], j]``, what replicate padding traces into);
    GatherElements for ``gather`` (every dimension indexed, all but one by an ``arange``
    along its own axis); GatherND for index tensors of one shape on the leading dimensions."""
    a, *idx = eqn.inputs
    dims = tuple(eqn.params["dims"])
    if len(idx) == 1:
        return ctx.node("Gather", [ctx.value(a), ctx.value(idx[0])], axis=dims[0])
    if _outer(ctx, idx, dims):
        x = ctx.value(a)
        for d, v in zip(dims, idx):
            flat = ctx.node("Reshape", [ctx.value(v), ctx.ints([-1])])
            x = ctx.node("Gather", [x, flat], axis=d)
        return x
    axis = _gather_axis(ctx, a, idx, dims, eqn.outputs[0])
    if axis is not None:
        return ctx.node("GatherElements", [ctx.value(a), ctx.value(idx[axis])], axis=axis)
    shapes = {(v.shape, ctx.twin_shape(v)) for v in idx}  # (one shape, at both sizes)
    if dims == tuple(range(len(dims))) and len(shapes) == 1:
        stacked = ctx.node("Concat", [ctx.node("Unsqueeze", [ctx.value(v), ctx.ints([-1])])
                                      for v in idx], axis=-1)
        return ctx.node("GatherND", [ctx.value(a), stacked])
    return ctx.refuse(f"advanced indexing at dims {dims} with index shapes "
                      f"{[v.shape for v in idx]} has no ONNX form here; index one dimension "
                      "at a time, or the leading dimensions with index tensors of one shape")


def _outer(ctx: Context, idx: list[Var], dims: tuple) -> bool:
    """Whether the index tensors are vectors along their own axes of the index shape, at
    adjacent dimensions (in every trace: a dynamic batch traced at 1 is no vector's 1)."""
    n = len(idx)
    if dims != tuple(range(dims[0], dims[0] + n)):
        return False
    return all(len(v.shape) == n and all(set(ctx.sizes(v, j)) == {1} for j in range(n)
                                         if j != k) for k, v in enumerate(idx))


def _gather_axis(ctx: Context, a: Var, idx: list[Var], dims: tuple, out: Var) -> int | None:
    if dims != tuple(range(len(a.shape))):
        return None
    ranges = [j for j, v in enumerate(idx) if v in ctx.graph.consts and
              all(_is_arange_along(c, j, len(a.shape)) for c in _traced_values(ctx, v))]
    if len(ranges) != len(idx) - 1:
        return None
    axis = next(j for j in range(len(idx)) if j not in ranges)
    same = all(ctx.sizes(idx[axis], d) == ctx.sizes(out, d) for d in range(len(out.shape)))
    return axis if idx[axis].shape == out.shape and same else None


def _traced_values(ctx: Context, const: Var) -> list[np.ndarray]:
    """The constant's value in the traces (its traced one, and its twin's with dynamic
    axes)."""
    if ctx.twin is None:
        return [ctx.graph.consts[const]]
    return [ctx.graph.consts[const], ctx.twin_consts[ctx.twin_of(const)]]


def _is_arange_along(array: np.ndarray, axis: int, rank: int) -> bool:
    array = np.asarray(array)
    if array.ndim != rank or array.size != array.shape[axis]:
        return False
    return bool(np.array_equal(array.reshape(-1), np.arange(array.size)))


@converter("view_scatter")
def view_scatter(ctx: Context, eqn: Eqn) -> str:
    """A write through a view (``y[:, 1:].mul_(2)`` in the model): the element positions the
    view chain selects, found by running the chain on the base's positions at export time,
    take the new values (ScatterND over the flattened base)."""
    base, values = eqn.inputs
    if ctx.dynamic_dims(base):
        ctx.refuse("a write through a view of a tensor with a dynamic axis: the positions it "
                   "writes are fixed at export. Hint: export without dynamic_axes, or build "
                   "the value out of place (torch.where, cat)")
    positions = np.arange(math.prod(base.shape), dtype=np.int64).reshape(base.shape)
    for prim, params in eqn.params["chain"]:
        positions = prim.forward(np, positions, **params)
    flat = ctx.node("Reshape", [ctx.value(base), ctx.ints([-1])])
    updates = ctx.node("Reshape", [ctx.value(values), ctx.ints([-1])])
    written = ctx.node("ScatterND", [flat, ctx.constant(positions.reshape(-1, 1)), updates])
    return ctx.node("Reshape", [written, ctx.ints(base.shape)])


@converter("pad_gather", shape_params=True)
def pad_gather(ctx: Context, eqn: Eqn) -> str | None:
    """Reflect, replicate or circular padding: a Gather at the positions, a constant; with
    dynamic sizes (in the plan, of the dims padded), :func:`_dynamic_pad`."""
    p = eqn.params
    twin = ctx.twin_eqns.get(id(eqn))
    if twin is not None and twin.params["plan"] != p["plan"]:
        return _dynamic_pad(ctx, eqn, twin.params["plan"])
    return ctx.node("Gather", [ctx.value(eqn.inputs[0]),
                               ctx.constant(flat_positions(np, p["plan"], p["mode"]))],
                    axis=p["dim"])


_PAD_MODES = {"reflect": "reflect", "replicate": "edge"}


def _dynamic_pad(ctx: Context, eqn: Eqn, other: tuple) -> str | None:
    """Padding of dims whose sizes are dynamic: ONNX's Pad (reflect; replicate as edge) or,
    for circular, a Concat of the wrapped ends, on the dims unflattened (several padded dims
    reach the primitive flattened into one, from a reshape) and flattened again."""
    p = eqn.params
    plan, dim, src = p["plan"], p["dim"], eqn.inputs[0]
    if any(a[1:] != b[1:] for a, b in zip(plan, other)) or \
            any(min(before, after) < 0 for _, before, after in plan):
        return ctx.refuse(f"{p['mode']} padding {plan} (size, before, after) of dynamic "
                          "sizes: the amounts change with the size, or crop")
    x, rank = ctx.value(src), len(src.shape)
    if len(plan) > 1:
        made = ctx.producers.get(src)
        if made is None or made.prim.name != "reshape" or \
                tuple(made.inputs[0].shape[dim:dim + len(plan)]) != tuple(n for n, _, _ in plan):
            return ctx.refuse(f"{p['mode']} padding of {len(plan)} flattened dims of dynamic "
                              "sizes, not from a reshape of them")
        x, rank = ctx.value(made.inputs[0]), len(made.inputs[0].shape)
    axes = list(range(dim, dim + len(plan)))
    if p["mode"] in _PAD_MODES:
        begins, ends = [0] * rank, [0] * rank
        for axis, (_, before, after) in zip(axes, plan):
            begins[axis], ends[axis] = before, after
        x = ctx.node("Pad", [x, ctx.ints(begins + ends)], mode=_PAD_MODES[p["mode"]])
    else:
        for axis, (_, before, after) in zip(axes, plan):
            ends = [_wrapped(ctx, x, axis, before, True)] if before else []
            ends.append(x)
            if after:
                ends.append(_wrapped(ctx, x, axis, after, False))
            x = ctx.node("Concat", ends, axis=axis)
    if len(plan) > 1:
        keep = ctx.node("Shape", [x], start=0, end=dim)
        rest = ctx.node("Shape", [x], start=dim + len(plan))
        x = ctx.node("Reshape", [x, ctx.node("Concat", [keep, ctx.ints([-1]), rest], axis=0)])
    else:
        ctx.register_dims(eqn.outputs[0], x, {dim: ("pad", ctx.sizes(src, dim),
                                                    plan[0][1] + plan[0][2])})
    return x


def _wrapped(ctx: Context, x: str, axis: int, count: int, last: bool) -> str:
    """The first or ``last`` ``count`` entries of ``x`` along ``axis`` (a circular pad's
    wrapped end). Where the size is below ``count``, every index is the size, so the Gather
    fails at run time as eager raises (a pad that wraps around more than once)."""
    n = ctx.node("Shape", [x], start=axis, end=axis + 1)
    index = ctx.ints(range(count))
    if last:
        index = ctx.node("Add", [index, ctx.node("Sub", [n, ctx.ints([count])])])
    short = ctx.node("Less", [n, ctx.ints([count])])
    return ctx.node("Gather", [x, ctx.node("Where", [short, n, index])], axis=axis)


@converter("class_index")
def class_index(ctx: Context, eqn: Eqn) -> str:
    """Class indices as int64, ``ignore_index``'s entries 0. ONNX cannot raise, so a negative
    index is made ``classes``: every index out of range then lies above it, where
    onnxruntime's gathers refuse it (a negative one they would read from the end)."""
    target, params = eqn.inputs[0], eqn.params
    index = ctx.cast(ctx.value(target), target.dtype, dtypes.int64)
    if params["ignore_index"] is not None:
        ignored = ctx.node("Equal", [index, ctx.scalar(params["ignore_index"], dtypes.int64)])
        index = ctx.node("Where", [ignored, ctx.scalar(0, dtypes.int64), index])
    negative = ctx.node("Less", [index, ctx.scalar(0, dtypes.int64)])
    return ctx.node("Where", [negative, ctx.scalar(params["classes"], dtypes.int64), index])
