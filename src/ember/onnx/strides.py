"""Strided cuts (slices with a step, strided convolutions and pools) and the dynamic axes:
how far the check trace moves each axis to see their counts change, and the refusal of a
count that stays the same in every trace while the axis it cuts changes (``x[:, ::16]`` has
2 rows at every T from 17 to 32: exported as a fixed 2, it is wrong at T = 16 or 33)."""

from __future__ import annotations

import math
from typing import Any

from ember.jit.ir import Graph, Var
from ember.onnx.context import Context


def stride_spreads(graph: Graph, axes: dict[int, dict[int, str]]) -> dict[str, int]:
    """Each dynamic axis name's spread: the largest product of the steps of the strided
    slices, convolutions and pools nested along it (at most :data:`MAX_SPREAD`). Moved that
    far, every ``ceil(T / step)`` size they make changes, which the nearer traces may all
    share (``x[:, ::16]`` has 2 rows at every T from 17 to 32). Each cut is followed back
    through the ops that keep its axis (elementwise ops, permutes, slices, other cuts) to the
    input axis it cuts, through a reshape to the axes it merges or splits (an nn.Linear on
    (B, T, C)); one that cannot be followed (an embedding's new axis) widens every dynamic
    axis name by its product."""
    made = {v: e for e in graph.eqns for v in e.outputs}
    named = {(v, a): n for i, v in enumerate(graph.inputs) for a, n in axes.get(i, {}).items()}
    spreads: dict[str, int] = {}
    inputs = set(graph.inputs)
    for eqn in graph.eqns:
        for axis, step in strides(eqn).items():
            todo = [(eqn.inputs[0], axis, step)]
            while todo:
                var, at, product = todo.pop()
                if at is not None and (var, at) not in named and var in made:
                    producer = made[var]
                    todo += [(v, a, -(-product * k // inner) * strides(producer).get(a, 1))
                             for v, a, k, inner in _source_axes(producer, var, at)]
                    continue
                if at is not None and var in inputs and (var, at) not in named:
                    continue  # (a static axis of an input)
                for name in [named[var, at]] if (var, at) in named else set(named.values()):
                    spreads[name] = min(max(spreads.get(name, 1), product), MAX_SPREAD)
    return spreads


def _source_axes(eqn: Any, out: Var, axis: int) -> list[tuple[Var, int | None, int, int]]:
    """:func:`source_axis`, and for a reshape that merges or splits ``axis`` each input axis
    of the run of whole axes it is made from, as ``(var, axis, k, inner)``: a step ``s`` on
    ``axis`` needs the run to move by ``s·k`` (``k`` the other output axes of the run), which
    that input axis moving by ``s·k / inner`` does (``inner`` the other input axes of the
    run): (B, T, C) -> (B, T·C) follows a cut of T·C back to T (by s / C) and C, not to B."""
    var, at = source_axis(eqn, out, axis)
    if at is not None or eqn.prim.name != "reshape":
        return [(var, at, 1, 1)]
    src = eqn.inputs[0].shape
    ins = {math.prod(src[:j]): j for j in range(len(src) + 1)}  # (a run's end: its last axis)
    outs = [math.prod(out.shape[:o]) for o in range(len(out.shape) + 1)]
    o0 = max(o for o in range(axis + 1) if outs[o] in ins)
    o1 = min((o for o in range(axis + 1, len(outs)) if outs[o] in ins), default=None)
    if o1 is None or not out.shape[axis]:
        return [(var, None, 1, 1)]
    first = min(j for j in range(len(src) + 1) if math.prod(src[:j]) == outs[o0])
    end = ins[outs[o1]]
    others = outs[o1] // outs[o0] // out.shape[axis]
    run = math.prod(src[first:end])
    return [(eqn.inputs[0], j, others, max(run // max(src[j], 1), 1)) for j in range(first, end)]


MAX_SPREAD = 256


def strides(eqn: Any) -> dict[int | None, int]:
    """``{input axis: step}`` of the steps above 1 that ``eqn`` cuts its first input with."""
    if eqn.prim.name == "slice":
        read = [e for e in eqn.params["index"] if e is not None]  # (one per input axis)
        return {a: abs(e[2]) for a, e in enumerate(read)
                if type(e) is tuple and e[2] is not None and abs(e[2]) > 1}
    stride = eqn.params.get("stride")  # (a window op's: not as_strided's memory strides,
    if not eqn.inputs or not isinstance(stride, tuple | list) or \
            eqn.prim.name in ("as_strided", "fold"):  # nor a fold's, over its output)
        return {}
    first = len(eqn.inputs[0].shape) - len(stride)  # (the spatial axes come last)
    return {first + i: s for i, s in enumerate(stride) if isinstance(s, int) and s > 1}


def source_axis(eqn: Any, out: Var, axis: int) -> tuple[Var, int | None]:
    """The input of ``eqn`` that its output ``out``'s ``axis`` is cut from, and that input's
    axis (None where none is followed: a new axis, a reshape that merges or splits it, a
    change of rank)."""
    if not eqn.inputs:
        return out, None
    src = eqn.inputs[0]
    if eqn.prim.name == "permute":
        return src, eqn.params["dims"][axis]
    if eqn.prim.name == "slice":
        d = o = 0  # (the input axis and the output axis each entry reads and makes)
        for e in eqn.params["index"]:
            if e is not None and type(e) is not tuple:  # (an integer: reads, makes none)
                d += 1
                continue
            if o == axis:
                return src, None if e is None else d
            o, d = o + 1, d + (e is not None)
        return src, d + axis - o
    if eqn.prim.name == "matmul" and len(eqn.inputs) == 2 and \
            len(eqn.inputs[1].shape) == len(out.shape) >= 2 and axis == len(out.shape) - 1:
        return eqn.inputs[1], axis  # (a product's last axis is its second operand's)
    if eqn.prim.name == "reshape":  # (an axis kept whole: as many elements before it)
        before = math.prod(out.shape[:axis])
        return src, next((j for j, n in enumerate(src.shape) if n == out.shape[axis] and
                          math.prod(src.shape[:j]) == before), None)
    return src, axis if len(src.shape) == len(out.shape) else None


def refuse_hidden_counts(ctx: Context, graph: Graph) -> None:
    """Refuses (``ctx.refuse``) each strided cut whose count along its axis is the same in
    every trace while the axis it cuts changes: the exported graph would keep that count
    where it depends on the size (the check trace that moves past the step was refused by a
    model bounded in size, or moved too little)."""
    for eqn, text in hidden_counts(ctx, graph, 3):
        ctx.eqn = eqn
        ctx.refuse(f"{text}, but another count at other sizes, and the exported model would "
                   "keep it: no trace shows how the count changes (the model refused the "
                   f"sizes past the step, or they do not reach it). {HINT}")
    ctx.eqn = None


HINT = ("Hint: trace at a size where the count changes with the next size (just at a "
        "multiple of the step), or export with fixed sizes")


def hidden_counts(ctx: Context, graph: Graph, traces: int) -> list[tuple[Any, str]]:
    """Each strided cut of ``graph`` whose count is the same in the first ``traces`` traces
    while the axis it cuts changes there, with what it keeps (``its step 16 leaves 2 entries
    along dimension 1 ...``)."""
    found = []
    for eqn in graph.eqns:
        cuts = strides(eqn)
        if not cuts or not eqn.outputs:
            continue
        ctx.eqn = eqn  # (for the sizes of a constant it reads)
        src, out = eqn.inputs[0], eqn.outputs[0]
        for d in cuts:
            o = _count_axis(eqn, d)
            if o is None:
                continue
            cut, count = ctx.sizes(src, d)[:traces], ctx.sizes(out, o)[:traces]
            if len(set(cut)) > 1 and len(set(count)) == 1 and \
                    (id(eqn) in ctx.twin_eqns or _grows(eqn, d, src.shape[d])):
                entries = "entry" if count[0] == 1 else "entries"
                found.append((eqn, f"its step {cuts[d]} leaves {count[0]} {entries} along "
                                   f"dimension {o} at the sizes {cut} of the dimension it cuts"))
    ctx.eqn = None
    return found


_WINDOWS = frozenset({"conv", "depthwise_conv2d", "max_pool", "max_pool_indices",
                      "window_sum", "window_gather"})  # (their counts keep the input's axes)


def _count_axis(eqn: Any, axis: int) -> int | None:
    """The output axis that counts the cuts of ``eqn``'s input ``axis`` (None where it is
    not one axis's count)."""
    out = eqn.outputs[0]
    if eqn.prim.name == "slice":
        return next((o for o in range(len(out.shape))
                     if source_axis(eqn, out, o) == (eqn.inputs[0], axis)), None)
    if eqn.prim.name == "unfold":  # (im2col: (N, C·k, L) or (N, L, C·k), L the windows)
        return 1 if eqn.params.get("layout") == "nlc" else 2
    return axis if eqn.prim.name in _WINDOWS and len(out.shape) == len(eqn.inputs[0].shape) \
        else None


def _grows(eqn: Any, axis: int, size: int) -> bool:
    """Whether the count of ``eqn``'s cut along input ``axis`` (of ``size``) changes with
    it: a window's always, a slice's unless fixed bounds stop it (``x[:, 2:10:4]``)."""
    if eqn.prim.name != "slice":
        return True
    entry = [e for e in eqn.params["index"] if e is not None][axis]
    span = abs(entry[2]) * 2
    return len(range(*slice(*entry).indices(size))) != \
        len(range(*slice(*entry).indices(size + span)))
