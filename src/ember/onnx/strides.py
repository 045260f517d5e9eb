"""Strided cuts (slices with a step, strided convolutions and pools) and the dynamic axes:
how far the check trace moves each axis to see their counts change, and the refusal of a
count that stays the same in every trace while the axis it cuts changes, where an op reads it
as a size (``x[:, ::16]`` has 2 rows at every T from 17 to 32: exported as a fixed 2, it is
wrong at T = 16 or 33), with a hint naming sizes that show it change."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.jit.ir import Graph, Var
from ember.onnx.context import Context

MAX_SPREAD = 256  # (the largest move of an axis past its steps: T = 20 + 12 + 256 at most)


def stride_spreads(graph: Graph, axes: dict[int, dict[int, str]]) -> dict[str, int]:
    """Each dynamic axis name's spread: the largest product of the steps of the strided
    slices, convolutions and pools nested along it, or of a crop's move (:func:`crops`), at
    most :data:`MAX_SPREAD`. Moved that far, every ``ceil(T / step)`` size they make changes,
    which the nearer traces may all share (``x[:, ::16]`` has 2 rows at every T from 17 to
    32), and so does a crop's bound rounded from T. Each cut is followed back
    through the ops that keep its axis (elementwise ops, permutes, slices, other cuts) to the
    input axis it cuts, through a reshape to the axes it merges or splits (an nn.Linear on
    (B, T, C)); one that cannot be followed (an embedding's new axis) widens every dynamic
    axis name by its product."""
    made = {v: e for e in graph.eqns for v in e.outputs}
    named = {(v, a): n for i, v in enumerate(graph.inputs) for a, n in axes.get(i, {}).items()}
    spreads: dict[str, int] = {}
    inputs = set(graph.inputs)
    for eqn in graph.eqns:
        moves = crops(eqn)
        for axis, step in strides(eqn).items():
            moves[axis] = max(moves.get(axis, 1), step)
        for axis, step in moves.items():
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


def crops(eqn: Any) -> dict[int | None, int]:
    """``{input axis: move}`` of the slices of step 1 that ``eqn`` cuts its first input with
    to a given start or stop ``b`` (``x[:, :32]``, ``x[:, 8:]``) that may be a size ``T``
    rounded down to a multiple (``x[:, :T // 16 * 16]``, 32 at every T from 32 to 47): the
    axis moved that far shows such a bound move, where a fixed crop stays. A rounded ``b > 0``
    is a multiple of some ``m > T - b`` (and ``m <= b``), so a ``b`` up to ``T / 2`` is no
    rounding, and ``T`` moved to ``2b`` moves the largest ``m`` (``b`` itself) too; a stop
    of 0 may be any multiple above ``T``: :data:`MAX_SPREAD`. (A start rounded to 0 is no
    slice in the graph: nothing shows it.)"""
    if eqn.prim.name != "slice":
        return {}
    read = [e for e in eqn.params["index"] if e is not None]  # (one per input axis)
    found = {}
    for a, e in enumerate(read):
        if type(e) is not tuple or e[2] not in (None, 1) or a >= len(eqn.inputs[0].shape):
            continue
        size = eqn.inputs[0].shape[a]
        moves = [2 * b - size for b in e[:2] if isinstance(b, int) and size < 2 * b <= 2 * size]
        if e[1] == 0 and size:
            moves.append(MAX_SPREAD)
        if moves:
            found[a] = max(moves)
    return found


def source_axis(eqn: Any, out: Var, axis: int) -> tuple[Var, int | None]:
    """The input of ``eqn`` that its output ``out``'s ``axis`` is cut from, and that input's
    axis (None where none is followed: a new axis, a reshape that merges or splits it, a
    change of rank). Of several operands of the output's rank, the first whose axis has the
    output's size: ``scale * x`` (a (B, C, 1, 1) scale) follows ``x``."""
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
    same_rank = [v for v in eqn.inputs if len(v.shape) == len(out.shape)]
    if not same_rank:
        return src, None
    return next((v for v in same_rank if v.shape[axis] == out.shape[axis]), same_rank[0]), axis


def refuse_hidden_counts(ctx: Context, graph: Graph) -> None:
    """Refuses (``ctx.refuse``) each strided cut whose count along its axis is the same in
    every trace while the axis it cuts changes, where an op reads that count as a size the
    exported graph fixes (:func:`count_reader`): it would keep the traced count (the check
    trace that moves past the step was refused by a model bounded in size, or moved too
    little). A count that only ops computing their sizes at run time carry (ONNX Conv counts
    its windows itself) is exported, declared dynamic where it reaches an output."""
    for eqn, o, text in hidden_counts(ctx, graph, 3):
        reader, carried = count_reader(graph, eqn, o)
        if reader is None:
            ctx.run_time.update(carried)
            continue
        ctx.eqn = eqn
        read = "a count of 1 broadcasts where another would not" if reader is eqn else \
            f"{ctx.where(reader)} reads it where the exported model may keep the traced count"
        ctx.refuse(f"{text}; other sizes give other counts, and {read}, while no trace shows "
                   f"how the count changes. {hint(eqn, o, ctx)}")
    for eqn, text in rounded_stops(ctx, graph):
        ctx.eqn = eqn
        ctx.refuse(text)
    ctx.eqn = None


def rounded_stops(ctx: Context, graph: Graph) -> list[tuple[Any, str]]:
    """Each slice whose fixed stop is the size of the dynamic dimension it cuts at the
    traced size but not at the others, none of which reaches twice the stop: a size rounded
    down to a multiple (``x[:, :T // 16 * 16]`` traced at T = 32) looks so, its stop fixed in
    every trace that moves T by less than the multiple (exported, T = 48 would keep 32 rows).
    The multiple is at most the stop, so a trace at twice the stop shows it move; where one
    did and the stop stayed, it is a fixed crop (``x[:, :32]``), exported as such."""
    found = []
    for eqn in graph.eqns:
        if eqn.prim.name != "slice" or id(eqn) in ctx.twin_eqns:
            continue
        src = eqn.inputs[0]
        read = [e for e in eqn.params["index"] if e is not None]
        for d, e in enumerate(read):
            if type(e) is not tuple or not isinstance(e[1], int) or (e[2] or 1) < 0:
                continue
            cut = ctx.sizes(src, d)
            if e[1] == cut[0] and any(n > e[1] for n in cut[1:]) and \
                    all(n < 2 * e[1] for n in cut[1:]):
                found.append((eqn, f"its stop {e[1]} is the size of the dimension {d} it cuts "
                                   f"at the traced size but not at the others {cut[1:]} "
                                   f"(traced: {_traced(ctx, graph, len(cut))}): a size rounded "
                                   "down (T // 16 * 16) looks so, and no trace shows it move. "
                                   "Hint: export with fixed sizes; for a fixed crop, trace at "
                                   "a size it cuts"))
    return found


_RUN_TIME = frozenset({  # (ops whose ONNX sizes follow their inputs' at run time)
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "lt", "le", "gt", "ge",
    "ne", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "erf", "neg",
    "relu", "copy", "cast", "where", "clamp", "clamp_tensor", "gelu", "silu", "mish", "elu",
    "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "softplus", "prelu", "softmax",
    "log_softmax", "softshrink", "hardshrink", "layer_norm", "group_norm", "matmul", "permute",
    "conv", "depthwise_conv2d"})


def count_reader(graph: Graph, eqn: Any, axis: int) -> \
        tuple[Any | None, set[tuple[Var, int]]]:
    """The first equation that reads the count of the cut ``eqn`` (its output's ``axis``)
    as a size the exported graph would fix at the traced count (a reshape, expand or slice,
    a constant of that size, an op whose converter reads its input's sizes), None where
    only :data:`_RUN_TIME` ops carry it (to the outputs, or away: a matrix product); and the
    dimensions that carry it. A count of 1 broadcasts against anything: ``eqn`` reads it
    where any later equation takes its output (an output only shows its run-time count)."""
    count = eqn.outputs[0].shape[axis]
    carried: set[tuple[Var, int]] = {(eqn.outputs[0], axis)}
    later = graph.eqns[_position(graph, eqn) + 1:]
    if count < 2:
        used = any(eqn.outputs[0] in e.inputs for e in later)
        return (eqn if used else None), carried
    for e in later:
        read = [(v, a) for v in e.inputs for a in range(len(v.shape)) if (v, a) in carried]
        if not read:
            continue
        if e.prim.name not in _RUN_TIME or any(_sized(graph, v, count) for v in e.inputs) \
                or e.prim.name in ("conv", "depthwise_conv2d") and read[0][0] is not e.inputs[0]:
            return e, carried
        carried.update(_carried(e, read, count))
    return None, carried


def _position(graph: Graph, eqn: Any) -> int:
    return next(i for i, e in enumerate(graph.eqns) if e is eqn)


def _carried(eqn: Any, read: list[tuple[Var, int]], count: int) -> list[tuple[Var, int]]:
    """The output dimensions of a :data:`_RUN_TIME` ``eqn`` that its ``read`` input
    dimensions become (the same axis counted from the end, where it keeps ``count``)."""
    if eqn.prim.name == "permute":
        return [(eqn.outputs[0], list(eqn.params["dims"]).index(a)) for _, a in read]
    return [(o, oa) for v, a in read for o in eqn.outputs
            if 0 <= (oa := a + len(o.shape) - len(v.shape)) < len(o.shape) and
            o.shape[oa] == count]


def _sized(graph: Graph, var: Var, count: int) -> bool:
    """Whether ``var`` is a constant that may be made from ``count``: with a dimension of
    that size, or a single value ``count`` or ``1 / count`` (a mean's divisor)."""
    if var not in graph.consts:
        return False
    value = np.asarray(graph.consts[var])
    if value.size == 1 and value.dtype.kind in "iuf":
        return bool(np.isclose(float(value.reshape(-1)[0]), [count, 1 / count]).any())
    return count in value.shape


def hidden_counts(ctx: Context, graph: Graph, traces: int) -> list[tuple[Any, int, str]]:
    """Each strided cut of ``graph`` whose count is the same in the first ``traces`` traces
    while the axis it cuts changes there, as ``(eqn, output axis, what it keeps)``: ``its
    step 16 leaves 2 entries along dimension 1 ...``."""
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
                found.append((eqn, o, f"its step {cuts[d]} leaves {count[0]} {entries} along "
                                      f"dimension {o} at the sizes {cut} of the dimension it "
                                      f"cuts in the traces ({_traced(ctx, graph, traces)})"))
    ctx.eqn = None
    return found


def _traced(ctx: Context, graph: Graph, traces: int) -> str:
    """The traced sizes of the inputs with dynamic axes: ``x (2, 20, 4), (3, 21, 4)``."""
    return "; ".join(
        f"{ctx.names.get(v, f'input {i}')} " + ", ".join(
            str(tuple(ctx.sizes(v, j)[t] for j in range(len(v.shape))))
            for t in range(min(traces, len(ctx.sizes(v, 0)))))
        for i, v in enumerate(graph.inputs) if ctx.dynamic_dims(v))


_HINT_REACH = 4096  # the sizes around the traced one that a hint looks through, each way


def hint(eqn: Any, axis: int, ctx: Context) -> str:
    """Where the count of ``eqn``'s cut along its output ``axis`` changes: the sizes ``n``
    of the dimension it cuts where ``n + 1`` has one more, the nearest below and above the
    traced size, named as an input's size where that dimension is one."""
    src = eqn.inputs[0]
    d = next(a for a in strides(eqn) if _count_axis(eqn, a) == axis)
    if eqn.prim.name != "slice" and "kernel_size" not in eqn.params and \
            eqn.prim.name not in ("conv", "depthwise_conv2d"):
        return "Hint: export with fixed sizes"
    step, n = strides(eqn)[d], src.shape[d]
    reach = min(step, _HINT_REACH)  # (a step like 2**64 would scan forever)
    grows = [j for j in range(max(n - reach, 1), n + reach + 1)
             if _count(eqn, d, j + 1) > _count(eqn, d, j) > 0]
    if not grows:
        return "Hint: export with fixed sizes"
    below, above = [j for j in grows if j <= n], [j for j in grows if j > n]
    near = " or ".join(str(j) for j in below[-1:] + above[:1])
    sizes = ctx.sizes(src, d)
    named = next((f"{ctx.names.get(v, 'the input')}'s dimension {j}" for v in ctx.graph.inputs
                  for j in range(len(v.shape)) if ctx.sizes(v, j) == sizes), None)
    where = f"{named} at {near}" if named else \
        f"the input sizes that make the dimension it cuts {near} (it is {n})"
    return (f"Hint: its count grows by one from a size n to n + 1 of that dimension where "
            f"n % {step} == {grows[0] % step}; trace with {where}, or export with fixed sizes")


def _count(eqn: Any, axis: int, size: int) -> int:
    """The count of ``eqn``'s cut when its input ``axis`` has ``size`` entries."""
    if eqn.prim.name == "slice":
        entry = [e for e in eqn.params["index"] if e is not None][axis]
        return len(range(*slice(*entry).indices(size)))
    p, i = eqn.params, axis - (len(eqn.inputs[0].shape) - len(eqn.params["stride"]))
    kernel = eqn.inputs[1].shape[2 + i] if eqn.prim.name in ("conv", "depthwise_conv2d") \
        else p["kernel_size"][i]
    pad = p["padding"][i] if p.get("padding") else 0
    lo, hi = pad if isinstance(pad, tuple | list) else (pad, pad)
    span = size + lo + hi - p.get("dilation", (1,) * (i + 1))[i] * (kernel - 1) - 1
    return max(span // p["stride"][i] + 1, 0)


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
    it: a window's always, a slice's unless fixed bounds keep it at every size
    (``x[:, 2:10:4]`` has 2 entries from T = 7 on, but 1 below: ``x[:, -10::4]`` too)."""
    if eqn.prim.name != "slice":
        return True
    entry = [e for e in eqn.params["index"] if e is not None][axis]
    count = len(range(*slice(*entry).indices(size)))
    return any(len(range(*slice(*entry).indices(n))) != count
               for n in (1, size + abs(entry[2]) * 2))
