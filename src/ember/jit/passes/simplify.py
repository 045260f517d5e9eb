"""Algebraic simplification, aimed at what the traced backward is full of: materialised
broadcasts, shape ops undone by the next shape op, multiplications by one, and sums of slices
scattered into zeros that tile a dimension (a ``split``'s gradient: one ``cat`` instead of a
zero-filled copy per piece and the adds); and an op whose outputs are partly unread is asked
to skip them (``Primitive.skip_outputs``: a max pool in inference computes its values, not its
winners).

Every rewrite gives the same values bit for bit, but one: where ``x`` holds ``-0.0``,
``x + 0`` gives ``+0.0`` and the simplified graph keeps ``-0.0`` (equal values; a slab joined
by ``cat`` instead of added to zeros is such an ``x + 0``). Slabs are never joined across an
effect, which may write their values in place.

A rewrite that would make a variable share memory with another where eager execution made a
fresh array (``cast`` to the same dtype, ``x * 1``, ``neg(neg(x))``, a ``copy``) is only done
when nothing can tell: the variable is no graph end and no effect's input, and what it would
alias is no state, input or constant and no effect touches it. Rewrites of view primitives
keep eager's aliasing, so they are always done.
"""

from __future__ import annotations

import math

from ember.errors import ShapeError
from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.passes.cse import rename_ends
from ember.ops.broadcast import broadcast_shapes
from ember.ops.primitive import PRIMITIVES

# elementwise primitives that broadcast their operands themselves
_BROADCASTING = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "where", "pow"})


def simplify(graph: Graph) -> Graph:
    """Rewrites equations into cheaper equal ones; dropped equations leave dead code for DCE.

    Example:
        >>> g = simplify(g)   # mul(expand(a, (32, 256)), b) becomes mul(a, b)
    """
    made: dict[Var, Eqn] = {}
    rename: dict[Var, Var] = {}
    pieces: dict[Var, list] = {}  # slabs scattered into zeros since the last effect, and sums
    pinned = _pinned(graph)
    read = graph.uses()
    kept = []
    for eqn in graph.eqns:
        eqn.inputs = [rename.get(v, v) for v in eqn.inputs]
        if isinstance(eqn.prim, Effect):
            # an effect may write a slab's value in place: a cat after it would read the new
            # value where the scatter before it read the old one
            pieces.clear()
        else:
            same = _identity_of(eqn, made, graph.consts)
            if same is not None and _may_alias(eqn, same, made, pinned):
                rename[eqn.outputs[0]] = same
                continue
            _rewrite(eqn, made, pinned)
            if eqn.prim.name == "index_put":
                pieces.update(_scattered(eqn, made, graph.consts))
            elif eqn.prim.name == "add":
                _assemble(eqn, pieces)
            unread = {i for i, v in enumerate(eqn.outputs) if v not in read}
            if unread and hasattr(eqn.prim, "skip_outputs"):  # (kernels and effects have not)
                eqn.params = eqn.prim.skip_outputs(eqn.params, unread) or eqn.params
        kept.append(eqn)
        for v in eqn.outputs:
            made[v] = eqn
    graph.eqns = kept
    rename_ends(graph, rename)
    return graph


def _pinned(graph: Graph) -> set[Var]:
    """Variables whose memory the world sees or an effect writes: a fresh array may not be
    replaced by one of these, nor one of these by an alias."""
    pinned = set(graph.live_roots())
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            pinned.update(eqn.inputs)
    return pinned


def _may_alias(eqn: Eqn, same: Var, made: dict[Var, Eqn], pinned: set[Var]) -> bool:
    return eqn.prim.view or (eqn.outputs[0] not in pinned and _private(same, made, pinned))


def _private(var: Var, made: dict[Var, Eqn], pinned: set[Var]) -> bool:
    """Whether ``var``'s memory (through views) was made by a pure equation and is seen or
    written by nothing but this graph's own equations."""
    while var.kind == "eqn" and var not in pinned:
        src = made.get(var)
        if src is None or isinstance(src.prim, Effect):
            return False
        if not src.prim.view:
            return True
        var = src.inputs[0]
    return False


def _identity_of(eqn: Eqn, made: dict[Var, Eqn], consts: dict) -> Var | None:
    """The variable this equation's one output equals, if it is an identity."""
    if len(eqn.outputs) != 1 or not eqn.inputs:
        return None
    out, x, name, p = eqn.outputs[0], eqn.inputs[0], eqn.prim.name, eqn.params
    same_type = x.shape == out.shape and x.dtype is out.dtype
    if name in ("reshape", "expand", "sum_to") and same_type:
        return x
    if name == "permute":
        if tuple(p["dims"]) == tuple(range(len(x.shape))):
            return x
        inner = made.get(x)
        if inner is not None and inner.prim.name == "permute" and \
                _compose(inner.params["dims"], p["dims"]) == tuple(range(len(x.shape))):
            return inner.inputs[0]
        return None
    if name == "cast" and same_type:
        return x
    if name == "neg":
        inner = made.get(x)
        if inner is not None and inner.prim.name == "neg":
            return inner.inputs[0]
        return None
    if name == "sum_to":  # sum_to(expand(y)) back to y's shape, with nothing really repeated
        inner = made.get(x)
        if inner is not None and inner.prim.name == "expand":
            y = inner.inputs[0]
            if y.shape == out.shape and math.prod(x.shape) == math.prod(y.shape):
                return y
        return None
    if name in ("mul", "add", "sub", "div") and len(eqn.inputs) == 2:
        return _neutral_operand(name, eqn.inputs, out, consts)
    return None


_NEUTRAL = {"mul": 1, "add": 0, "sub": 0, "div": 1}


def _neutral_operand(name: str, inputs: list[Var], out: Var, consts: dict) -> Var | None:
    """``x * 1``, ``1 * x``, ``x + 0``, ``0 + x``, ``x - 0``, ``x / 1`` → ``x`` when the
    constant changes neither the shape nor the dtype of the result."""
    sides = ((0, 1), (1, 0)) if name in ("mul", "add") else ((0, 1),)
    for keep, drop in sides:
        x, c = inputs[keep], inputs[drop]
        if c.kind != "const" or x.shape != out.shape or x.dtype is not out.dtype:
            continue
        value = consts.get(c)
        if value is not None and bool((value == _NEUTRAL[name]).all()):
            return x
    return None


def _compose(first: tuple, second: tuple) -> tuple:
    """The single permutation equal to ``permute(permute(x, first), second)``."""
    return tuple(first[d] for d in second)


def _rewrite(eqn: Eqn, made: dict[Var, Eqn], pinned: set[Var]) -> None:
    """In-place rewrites that keep the equation: operands read through cheaper producers."""
    name = eqn.prim.name
    if name in _BROADCASTING:
        _drop_expands(eqn, made)
    elif name == "reshape":
        inner = made.get(eqn.inputs[0])
        # reshape(reshape(y)) and reshape(copy(y)): reshape copies when it has to
        if inner is not None and inner.prim.name in ("reshape", "copy") and \
                (inner.prim.name == "reshape" or (eqn.outputs[0] not in pinned and
                                                  _private(inner.inputs[0], made, pinned))):
            eqn.inputs = [inner.inputs[0]]
    elif name == "permute":
        inner = made.get(eqn.inputs[0])
        if inner is not None and inner.prim.name == "permute":
            eqn.inputs = [inner.inputs[0]]
            eqn.params = {**eqn.params, "dims": _compose(inner.params["dims"],
                                                         eqn.params["dims"])}


def _drop_expands(eqn: Eqn, made: dict[Var, Eqn]) -> None:
    """An ``expand`` feeding an op that broadcasts anyway: read what was expanded."""
    out_shape = eqn.outputs[0].shape
    for i, v in enumerate(eqn.inputs):
        inner = made.get(v)
        if inner is None or inner.prim.name != "expand":
            continue
        trial = [*eqn.inputs[:i], inner.inputs[0], *eqn.inputs[i + 1:]]
        if _broadcast(trial) == out_shape:
            eqn.inputs = trial


def _broadcast(vars_: list[Var]) -> tuple[int, ...] | None:
    try:
        return broadcast_shapes(*(v.shape for v in vars_))
    except ShapeError:
        return None


def _assemble(eqn: Eqn, pieces: dict[Var, list]) -> None:
    """``add`` of values scattered into zeros at disjoint slabs of one dimension: recorded in
    ``pieces`` (dim, slab start, stop, value), and, once the slabs tile the dimension, the
    ``add`` becomes a ``cat`` of the values in order."""
    out = eqn.outputs[0]
    parts = [pieces.get(v) for v in eqn.inputs]
    if any(p is None for p in parts) or any(v.shape != out.shape for v in eqn.inputs):
        return
    dims = {dim for p in parts for dim, _, _, _ in p}
    slabs = sorted(((start, stop, value) for p in parts for _, start, stop, value in p),
                   key=lambda slab: slab[:2])
    if len(dims) != 1 or any(a[1] > b[0] for a, b in zip(slabs, slabs[1:])):
        return  # slabs of different dimensions, or overlapping ones
    dim = dims.pop()
    pieces[out] = [(dim, *slab) for slab in slabs]
    if slabs[0][0] == 0 and slabs[-1][1] == out.shape[dim] and \
            all(a[1] == b[0] for a, b in zip(slabs, slabs[1:])):
        eqn.prim, eqn.params = PRIMITIVES["cat"], {"dim": dim}
        eqn.inputs = [value for _, _, value in slabs]


def _scattered(eqn: Eqn, made: dict[Var, Eqn], consts: dict) -> dict[Var, list]:
    """``{output: [(dim, start, stop, value)]}`` when this ``index_put`` writes ``value`` into
    zeros at a slab of one dimension, else ``{}``."""
    var, value = eqn.outputs[0], eqn.inputs[-1]
    if len(eqn.inputs) != 2 or eqn.params["dims"] or eqn.params["mode"] == "multiply" or \
            not _zero(eqn.inputs[0], made, consts) or value.dtype is not var.dtype:
        return {}
    slab = _slab(eqn.params["basic"], var.shape)
    if slab is None:
        return {}
    dim, start, stop = slab
    if value.shape != var.shape[:dim] + (stop - start,) + var.shape[dim + 1:]:
        return {}  # a value broadcast over its slab
    return {var: [(dim, start, stop, value)]}


def _slab(index: tuple, shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(dim, start, stop) when a basic index selects a contiguous slab of one dimension and
    all of the others."""
    slab = None
    for dim, entry in enumerate(index):
        if type(entry) is not tuple:
            return None  # an int or a new axis
        start, stop, step = slice(*entry).indices(shape[dim])
        if step != 1 or stop <= start:
            return None
        if (start, stop) != (0, shape[dim]):
            if slab is not None:
                return None
            slab = (dim, start, stop)
    return slab


def _zero(var: Var, made: dict[Var, Eqn], consts: dict) -> bool:
    """Whether ``var`` is all zeros: a zero constant, or one expanded."""
    if var.kind == "const":
        value = consts.get(var)
        return value is not None and not bool(value.any())
    src = made.get(var)
    return src is not None and src.prim.name == "expand" and _zero(src.inputs[0], made, consts)
