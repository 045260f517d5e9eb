"""Derivatives of whole Python functions, as ``torch.autograd.functional``: :func:`vjp`,
:func:`jvp`, :func:`jacobian`, :func:`hessian`, :func:`vhp` and :func:`hvp`.

Each takes ``func`` and its ``inputs`` (a tensor, or a tuple of tensors passed as separate
arguments) and answers in the same structure: a tuple where a tuple was given, a tensor where a
tensor was. ``func`` runs on fresh copies of the inputs, so tensors it captures from outside
are constants. Results are detached unless ``create_graph=True``. Where an output does not
depend on an input the answer is zeros, or an error with ``strict=True``.

For transforms that compose (``vmap`` of ``grad``, …) see :mod:`ember.func`.

Example:
    >>> from ember.autograd.functional import jacobian
    >>> jacobian(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.autograd import forward_ad
from ember.autograd.engine import grad
from ember.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ember.errors import ArgumentError, GradError
from ember.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("reverse-mode", "forward-mode")
Tensors = Tensor | Sequence[Tensor]
_batched_rows: Callable | None = None  # ember.func's vmapped_rows, once ember.func registers


def register_batched_rows(rows: Callable) -> None:
    """Called by :mod:`ember.func` (a layer above, so this one imports nothing of it):
    ``vectorize=True`` then runs the backward passes of all rows of a Jacobian as
    ``rows(pull, seeds, who, hint)``, one ``vmap``-ed pass (as PyTorch's), which answers None
    where the batched pass cannot run (the rows then loop)."""
    global _batched_rows
    _batched_rows = rows


# ---------------------------------------------------------------------------------------------
# Public functions


def vjp(func: Callable, inputs: Tensors, v: Tensors | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ·J)``: the vector-Jacobian product at ``inputs``.

    ``v`` has the shape of the outputs; it may be left out when ``func`` returns one element.

    Example:
        >>> out, g = vjp(lambda x: (x ** 2).sum(), ember.tensor([1.0, 2.0]))
        >>> g
        tensor([2., 4.])
    """
    with enable_grad():
        in_tuple, inputs = _fresh_inputs(inputs, "vjp", create_graph)
        out_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        v = _vector(v, outputs, out_tuple, "vjp", "outputs", "returns a single Tensor",
                    create_graph)
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        found = _reverse(outputs, inputs, v, create_graph)
        result = _zeros_where_missing(found, inputs, strict, create_graph, "vjp",
                                      "the outputs do not depend on input {i}")
    return (_shape_like(_finish(outputs, create_graph), out_tuple),
            _shape_like(_finish(result, create_graph), in_tuple))


def jvp(func: Callable, inputs: Tensors, v: Tensors | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J·v)``: the Jacobian-vector product at ``inputs``.

    Computed, as PyTorch does, by differentiating the vector-Jacobian product with respect to
    its vector (reverse mode twice). :func:`ember.func.jvp` uses forward mode instead.

    Example:
        >>> out, t = jvp(lambda x: x.exp(), ember.zeros(2), ember.tensor([1.0, 3.0]))
        >>> t
        tensor([1., 3.])
    """
    with enable_grad():
        in_tuple, inputs = _fresh_inputs(inputs, "jvp", create_graph)
        v = _vector(v, inputs, in_tuple, "jvp", "inputs", "takes a single Tensor", create_graph)
        out_tuple, outputs = _outputs(func, inputs, "jvp", strict)
        # vᵀJ is linear in its vector u, so J·v is the gradient of (uᵀJ)·v with respect to u;
        # u's value never matters (zeros keep NaN out).
        u = tuple(o.detach().new_zeros(o.shape).requires_grad_() for o in outputs)
        pulled = _reverse(outputs, inputs, u, create_graph=True)
        if strict:
            _require_dependence(pulled, "jvp", "the outputs do not depend on input {i}")
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        found = _reverse(pulled, u, v, create_graph)
        result = _zeros_where_missing(found, outputs, strict, create_graph, "jvp",
                                      "output {i} does not depend on the inputs")
    return (_shape_like(_finish(outputs, create_graph), out_tuple),
            _shape_like(_finish(result, create_graph), out_tuple))


def jacobian(func: Callable, inputs: Tensors, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j`` a tensor of
    shape ``outputs[i].shape + inputs[j].shape``.

    With several inputs or outputs the answer nests as ``result[i][j]`` (a tuple level is
    dropped where the user gave a single tensor). ``strategy="forward-mode"`` builds it one
    input element at a time with dual tensors, which is cheaper when the outputs outnumber the
    inputs; ``vectorize`` runs the backward passes of all output elements as one ``vmap``-ed
    pass (faster; the same values), as PyTorch's: hooks then run once, on the gradients of
    all rows batched, and random ops in a backward are refused. Where the batched pass
    cannot run (a custom Function or a hook reading batched values as NumPy or numbers) it
    loops over the rows after all, so hooks that ran in the failed attempt run again.

    Example:
        >>> jacobian(lambda x, y: x * y, (ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])))
        (tensor([[3., 0.],
                [0., 4.]]), tensor([[1., 0.],
                [0., 2.]]))
    """
    if strategy not in _STRATEGIES:
        raise ArgumentError(f"jacobian: strategy must be one of {_STRATEGIES}, got {strategy!r}. "
                            "Hint: forward mode pays off when the outputs outnumber the inputs")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('jacobian: create_graph=True and strategy="forward-mode" '
                                      'cannot be used together; use strategy="reverse-mode"')
        if strict:
            raise GradError('jacobian: strict=True and strategy="forward-mode" cannot be used '
                            'together; use strategy="reverse-mode"')
        return _forward_jacobian(func, inputs)
    if strict and vectorize:
        raise GradError("jacobian: strict=True and vectorize=True cannot be used together; "
                        "set one of them to False")
    with enable_grad():
        in_tuple, inputs = _fresh_inputs(inputs, "jacobian", create_graph)
        out_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        rows = _vectorized(outputs, inputs, create_graph) if vectorize else None
        if rows is None:
            rows = [_jacobian_of(i, out, inputs, create_graph, strict)
                    for i, out in enumerate(outputs)]
    return _shape_like(_finish(rows, create_graph), (out_tuple, in_tuple))


def hessian(func: Callable, inputs: Tensors, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a function with one output element: for inputs ``i`` and ``j`` a tensor
    of shape ``inputs[i].shape + inputs[j].shape``, nested as ``result[i][j]`` when ``inputs``
    is a tuple.

    The inner Jacobian is always reverse mode; ``outer_jacobian_strategy="forward-mode"``
    differentiates it forward (forward-over-reverse).

    Example:
        >>> hessian(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ArgumentError(f"hessian: outer_jacobian_strategy must be one of {_STRATEGIES}, "
                            f"got {outer_jacobian_strategy!r}")
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar(*xs: Tensor) -> Tensor:
        _, (out,) = _outputs(func, xs, "hessian", strict, scalar=True)
        return out.reshape(())

    def gradient(*xs: Tensor) -> tuple:
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_() for x in xs)
        found = jacobian(scalar, xs, create_graph=True)
        if strict:
            _require_dependence(found, "hessian", "the gradient does not depend on input {i} "
                                "(a function linear in it has a zero Hessian)", on_graph=True)
        return found

    nested = jacobian(gradient, inputs, create_graph, strict, vectorize, outer_jacobian_strategy)
    return _shape_like(nested, (in_tuple, in_tuple))


def vhp(func: Callable, inputs: Tensors, v: Tensors | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ·H)`` for a function with one output element.

    Example:
        >>> out, r = vhp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.ones(2))
        >>> r
        tensor([ 6., 12.])
    """
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs: Tensors, v: Tensors | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H·v)`` for a function with one output element (equal to :func:`vhp`
    for the symmetric Hessians of twice continuously differentiable functions).

    Example:
        >>> out, r = hvp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.ones(2))
        >>> r
        tensor([ 6., 12.])
    """
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


# ---------------------------------------------------------------------------------------------
# The pieces


def _as_tuple(value: Any, what: str, who: str) -> tuple[bool, tuple]:
    """``value`` as a tuple of tensors, and whether the user gave a tuple."""
    given_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if given_tuple else (value,)
    for i, x in enumerate(values):
        if not isinstance(x, Tensor):
            where = f"entry {i} is" if given_tuple else "it is"
            raise TypeError(f"{who}: {what} must be a Tensor or a tuple of Tensors, but "
                            f"{where} {type(x).__name__}")
    return given_tuple, values


def _fresh_inputs(inputs: Any, who: str, create_graph: bool) -> tuple[bool, tuple]:
    """New tensors for ``func`` to run on: views (keeping the graph back to the caller) when
    ``create_graph`` and the input requires grad, detached copies otherwise."""
    given_tuple, inputs = _as_tuple(inputs, "inputs", who)
    return given_tuple, tuple(x.view_as(x) if create_graph and x.requires_grad
                              else x.detach().requires_grad_() for x in inputs)


def _outputs(func: Callable, inputs: tuple, who: str, strict: bool,
             scalar: bool = False) -> tuple[bool, tuple]:
    """Runs ``func``; ``scalar`` demands a single one-element tensor."""
    out = func(*inputs)
    given_tuple, outputs = _as_tuple(out, "the outputs of func", who)
    if scalar and given_tuple:
        raise GradError(f"{who}: func should return a single Tensor, got a "
                        f"{type(out).__name__} of {len(outputs)}")
    if scalar and out.numel() != 1:
        raise GradError(f"{who}: func should return a single element, got shape "
                        f"{tuple(out.shape)}. Hint: reduce it, e.g. with .sum()")
    if strict:
        for i, o in enumerate(outputs):
            if not o.requires_grad:
                raise GradError(f"{who}: output {i} of func does not require grad (strict=True "
                                "needs every output computed differentiably from the inputs)")
    return given_tuple, outputs


def _vector(v: Any, like: tuple, like_tuple: bool, who: str, what: str, single: str,
            create_graph: bool) -> tuple | None:
    """Checks the user's ``v`` against the tensors it pairs with; detached, unless
    ``create_graph`` (then, as in PyTorch, a view keeps the graph back to the caller's ``v``)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise GradError(f"{who}: v can be left out only when func {single} with a single "
                            f"element; got {what} of shapes {[tuple(t.shape) for t in like]}")
        return None
    _, v = _as_tuple(v, "v", who)
    if len(v) != len(like):
        raise GradError(f"{who}: v has {len(v)} tensors but there are {len(like)} {what}")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.shape != b.shape:
            entry = f"entry {i} of v" if like_tuple else "v"
            raise GradError(f"{who}: {entry} has shape {tuple(a.shape)} but the {what} has "
                            f"shape {tuple(b.shape)}")
    return tuple(a.view_as(a) if create_graph and a.requires_grad else a.detach() for a in v)


def _reverse(outputs: Sequence, inputs: tuple, seeds: tuple | None, create_graph: bool,
             retain_graph: bool | None = None, batched: bool = False) -> tuple:
    """``grad`` of the outputs that have a graph (None for inputs they do not reach)."""
    seeds = (None,) * len(outputs) if seeds is None else seeds
    live = [(o, s) for o, s in zip(outputs, seeds) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    outs, grads = zip(*live)
    return grad(outs, inputs, grads if any(g is not None for g in grads) else None,
                retain_graph=retain_graph, create_graph=create_graph, allow_unused=True,
                is_grads_batched=batched)


def _zeros_where_missing(found: tuple, like: tuple, strict: bool, create_graph: bool, who: str,
                         missing: str) -> tuple:
    """Zeros for the gradients the engine did not reach; errors for them with ``strict``."""
    if strict:
        _require_dependence(found, who, missing, on_graph=create_graph)
    return tuple(ref.detach().new_zeros(ref.shape) if g is None else g
                 for g, ref in zip(found, like))


def _require_dependence(found: Sequence, who: str, missing: str, on_graph: bool = False) -> None:
    """``strict``: every result was reached (and, ``on_graph``, still depends on the inputs)."""
    for i, g in enumerate(found):
        if g is None or (on_graph and not g.requires_grad):
            raise GradError(f"{who}: {missing.format(i=i)}; strict=True does not allow that. "
                            "Hint: strict=False gives zeros for it")


def _vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple | None:
    """All rows of the Jacobian (those of all outputs together) as one ``vmap``-ed backward
    over the rows of the identity; None where that cannot run (see
    :func:`register_batched_rows`)."""
    sizes = [o.numel() if o.requires_grad else 0 for o in outputs]
    total = sum(sizes)
    if _batched_rows is None or not total:
        return None
    from ember.ops.creation import eye

    seeds, start = [], 0
    for o, n in zip(outputs, sizes):
        seed = None
        if n:
            seed = o.detach().new_zeros((total, n))
            seed.narrow(0, start, n).copy_(eye(n, dtype=o.dtype, device=o.device))
            seed = seed.reshape((total,) + tuple(o.shape))
        seeds.append(seed)
        start += n

    def pull(*seeds: Tensor | None) -> list:
        live = [(o, s) for o, s in zip(outputs, seeds) if s is not None]
        found = _reverse(tuple(o for o, _ in live), inputs, tuple(s for _, s in live),
                         create_graph, retain_graph=True)
        return [x.new_zeros(x.shape) if g is None else g for g, x in zip(found, inputs)]
    rows = _batched_rows(pull, seeds, "jacobian", "pass vectorize=False (one backward pass "
                         "per row)")
    if rows is None:
        return None
    starts = [sum(sizes[:i]) for i in range(len(outputs))]
    return tuple(tuple(r.narrow(0, s, n).reshape(o.shape + x.shape) if n
                       else x.new_zeros(o.shape + x.shape) for r, x in zip(rows, inputs))
                 for o, s, n in zip(outputs, starts, sizes))


def _jacobian_of(i: int, out: Tensor, inputs: tuple, create_graph: bool,
                 strict: bool) -> tuple:
    """One row of the Jacobian: d out / d input_j for every j, one backward per element."""
    flat = out.reshape(-1)
    columns: list[list] = [[] for _ in inputs]
    for k in range(flat.numel()):
        found = _reverse((flat[k],), inputs, None, create_graph, retain_graph=True)
        found = _zeros_where_missing(found, inputs, strict, create_graph, "jacobian",
                                     f"output {i} does not depend on input {{i}}")
        for col, g in zip(columns, found):
            col.append(g)
    return tuple(_stack(col, out.shape + x.shape, x) for col, x in zip(columns, inputs))


def _forward_jacobian(func: Callable, inputs: Any) -> Any:
    """The Jacobian column by column: one forward pass with a unit tangent per input element."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(x.detach() for x in inputs)
    per_input = []
    out_tuple = False
    primals: tuple = ()
    for j, x in enumerate(inputs):
        columns = []
        for k in range(x.numel()):
            with forward_ad.dual_level():
                duals = tuple(forward_ad.make_dual(y, _unit(y, k) if m == j
                                                   else y.new_zeros(y.shape))
                              for m, y in enumerate(inputs))
                out_tuple, outs = _as_tuple(func(*duals), "the outputs of func", "jacobian")
                unpacked = [forward_ad.unpack_dual(o) for o in outs]
            primals = tuple(u.primal.detach() for u in unpacked)
            columns.append([u.primal.new_zeros(u.primal.shape) if u.tangent is None
                            else u.tangent.detach() for u in unpacked])
        per_input.append(columns)
    if not primals:                       # every input is empty: run once for the shapes
        out_tuple, primals = _outputs(func, inputs, "jacobian", strict=False)
    rows = tuple(tuple(_stack([col[i] for col in per_input[j]], p.shape + x.shape, x, -1)
                       for j, x in enumerate(inputs))
                 for i, p in enumerate(primals))
    return _shape_like(rows, (out_tuple, in_tuple))


def _hessian_product(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool,
                     who: str) -> tuple[Any, Any]:
    """:func:`vhp` (vᵀH, a second backward) and :func:`hvp` (H·v, the double-backward trick
    once more, which is what PyTorch computes)."""
    with enable_grad():
        in_tuple, inputs = _fresh_inputs(inputs, who, create_graph)
        v = _vector(v, inputs, in_tuple, who, "inputs", "takes a single Tensor", create_graph)
        _, outputs = _outputs(func, inputs, who, strict, scalar=True)
        gradient = _reverse(outputs, inputs, None, create_graph=True)
        if strict:
            _require_dependence(gradient, who, "the output does not depend on input {i}",
                                on_graph=True)
        if who == "hvp":
            u = tuple(x.detach().new_zeros(x.shape).requires_grad_() for x in inputs)
            gradient, wrt = _reverse(gradient, inputs, u, create_graph=True), u
        else:
            wrt = inputs
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        found = _reverse(gradient, wrt, v, create_graph)
        result = _zeros_where_missing(found, inputs, strict, create_graph, who,
                                      "the gradient does not depend on input {i}")
    return (_finish(outputs, create_graph)[0],
            _shape_like(_finish(result, create_graph), in_tuple))


def _unit(x: Tensor, k: int) -> Tensor:
    """A tensor shaped like ``x`` with a one at flat index ``k``."""
    e = x.new_zeros(x.numel())
    e[k] = 1
    return e.reshape(x.shape)


def _stack(parts: list, shape: tuple, like: Tensor, dim: int = 0) -> Tensor:
    """One Jacobian block: its rows (reverse mode, ``dim=0``) or columns (forward mode,
    ``dim=-1``) stacked and shaped ``shape``."""
    from ember.ops.join import stack

    return stack(parts, dim).reshape(shape) if parts else like.new_zeros(shape)


def _finish(values: Any, create_graph: bool) -> Any:
    """Drops the graph from (nested tuples of) results unless the user asked to keep it."""
    if isinstance(values, Tensor):
        return values if create_graph else values.detach()
    return tuple(_finish(v, create_graph) for v in values)


def _shape_like(values: Any, given_tuple: bool | tuple[bool, bool]) -> Any:
    """Undoes :func:`_as_tuple`: one tuple level per flag that is False is dropped."""
    outer, inner = given_tuple if isinstance(given_tuple, tuple) else (given_tuple, None)
    if inner is False:
        values = tuple(v[0] for v in values)
    return values if outer else values[0]
