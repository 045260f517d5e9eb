"""In-place ops (``x.add_(y)``, ``x += y``, ``x[i] = v``) built from their out-of-place forms.

The result is computed out of place, written into ``x``'s memory (so views of ``x`` see it),
``x``'s version counter goes up, and ``x``'s history moves to the new node, whose input is an
alias of the old ``x``. When that op's backward holds the old value (``x.sin_()``,
``x.clamp_(0)``), the alias keeps a copy of it, as PyTorch saves the original ``self``; an
*earlier* op that saved ``x`` then fails in backward with a clear error instead of using the
overwritten value.

When ``x`` is a view, its base's history moves too: the base becomes ``view_scatter(old base,
result)``, and ``x`` (and, when next used, every other view of that memory) is made again
from the new base — PyTorch's "CopySlices", so gradients stay right.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.autograd.grad_mode import GRAD, refuse_inference_write
from ember.autograd.graph import WORTH_DROPPING, let_go
from ember.autograd.roots import refresh_stale
from ember.backend.memory_block import may_overlap, writable_alias
from ember.errors import DTypeError, EmberError, GradError, OpError, ShapeError
from ember.ops.overrides import TENSOR_LIKE
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    apply,
    custom_view_message,
    not_casting,
    primitive,
    refresh_view,
    replay_view,
)
from ember.tensor import Tensor, VersionCounter, _wrap, method


@primitive
class ViewScatter(Primitive):
    """``base`` with the region a view chain selects replaced by ``src`` (``in_place``: in
    ``base`` itself, see ``Primitive.writes_input``)."""

    name = "view_scatter"
    backward_name = "CopySlices"  # (PyTorch's node for a write through a view)
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False
    allocates = writes_input = True

    def forward(self, xp, base, src, *, chain, in_place=False):
        out = base if in_place else xp.array(base, copy=True)
        region = out
        for prim, params in chain:
            region = prim.forward(xp, region, **params)
        if not region.size:
            return out
        if not xp.may_share_memory(region, out):
            if in_place:
                raise OpError("view_scatter: the view chain copies instead of viewing; write "
                              "through the base tensor instead")
            if any(prim.name in _RETYPING for prim, _ in chain):
                return _scatter_in_contiguous_copy(xp, out, src, chain)
            return _scatter_at_positions(xp, out, src, chain)  # (a gradient's layout)
        if not region.flags.writeable:  # (an expand in the chain: a read-only broadcast)
            if any(prim.name in _RETYPING for prim, _ in chain):
                raise _retyping_error(chain)
            return _scatter_at_positions(xp, out, src, chain)
        region[...] = src
        return out

    def infer(self, base, src, *, chain, in_place=False):
        return base

    def vjp(self, ctx, g):
        chain = ctx.params["chain"]
        g_src = replay_view(g, chain)
        from ember.ops.creation import zeros_like

        g_base = apply(ViewScatter, g, zeros_like(g_src), chain=chain)
        return g_base, g_src

    def jvp(self, ctx, d_base, d_src):
        return apply(ViewScatter, d_base, d_src, chain=ctx.params["chain"])


# the views that may show one element at several positions (the others show each at most
# once: no overlap to look for, and no sort of every position)
_REPEATING = frozenset({"expand", "as_strided", "unfold_view"})


# the views that change the dtype: replayed on int64 positions they select wrong elements
# (np.imag of positions is zeros), so a write through them is never done by positions
_RETYPING = frozenset({"real", "imag", "view_as_real", "view_as_complex", "view_dtype"})


def _scatter_in_contiguous_copy(xp: Any, out: Any, src: Any, chain: tuple) -> Any:
    """``view_scatter`` through a dtype-changing chain where ``out`` (a gradient laid out
    otherwise than the base) gives no view: ``out`` copied C-contiguous, the chain replayed
    on the copy (a view again whenever the base's was), and ``src`` written there."""
    buf = xp.array(out, order="C", copy=True)
    region = buf
    for prim, params in chain:
        region = prim.forward(xp, region, **params)
    if not (region.flags.writeable and xp.may_share_memory(region, buf)):
        raise _retyping_error(chain)
    region[...] = src
    return buf


def _retyping_error(chain: tuple) -> OpError:
    names = " -> ".join(prim.name for prim, _ in chain)
    return OpError(f"view_scatter: cannot write a gradient through the view chain {names}: "
                   "it changes the dtype and gives no writable view of the gradient's "
                   "layout. Hint: clone() the view before the in-place operation, or write "
                   "through a contiguous() tensor")


def _scatter_at_positions(xp: Any, out: Any, src: Any, chain: tuple) -> Any:
    """``view_scatter`` where replaying ``chain`` on ``out`` gives no writable view of it (a
    reshape of a gradient laid out otherwise than the base copies; an expand is read-only):
    the chain replayed on the element positions instead, and ``src`` written at those."""
    pos = xp.arange(out.size).reshape(out.shape)
    for prim, params in chain:
        pos = prim.forward(xp, pos, **params)
    if any(prim.name in _REPEATING for prim, _ in chain) and xp.unique(pos).size != pos.size:
        raise OpError("view_scatter: more than one element of the written-to tensor refers "
                      "to a single memory location (an expanded view). Hint: clone() the "
                      "tensor before the in-place operation")
    out[xp.unravel_index(pos, out.shape)] = xp.broadcast_to(src, pos.shape)
    return out


def _densified(result: Any) -> Any:
    """A sparse result (``d.mul_(s)``: ``d * s`` keeps s's pattern) as the dense tensor
    written in place, as PyTorch writes it; anything else as it is."""
    from ember.sparse.tensor import SparseTensor  # (a package over the ops: imported late)

    return result.to_dense() if isinstance(result, SparseTensor) else result


def inplace(x: Tensor, name: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Writes ``compute(alias of x)`` into ``x`` and moves ``x``'s history to the result."""
    if x._vc.inference and not GRAD.inference:
        refuse_inference_write(x, name)
    if GRAD.enabled:
        _refuse_leaf_write(x, name)
        if x._view is not None and x._view.version != x._vc.value:
            refresh_stale(x)  # (its memory was written through another view: the new history)
    if x._view is not None:
        _refuse_view_write(x, name)
    own = GRAD.enabled and x.requires_grad
    old = _wrap(x._data, x._device, x.requires_grad, x._node, x._idx,
                _counter_at(x._vc.value) if own else x._vc)
    if DISPATCH.stack:  # (eager code with no transform skips the handler calls)
        _tell_handlers("on_alias", old, x)
    result = not_casting(compute, old)  # (autocast leaves in-place ops alone, as PyTorch's)
    if not isinstance(result, Tensor):  # (the common case pays this one check)
        result = _densified(result)
        if not isinstance(result, Tensor):  # (``t += mt``: a MaskedTensor, torch refuses too)
            raise TypeError(f"{name}: the result is a {type(result).__name__}, which cannot "
                            f"be written into a plain tensor in place. Hint: use the "
                            f"out-of-place form (t = t + other)")
    if not own and GRAD.enabled and result.requires_grad:
        # x needs no grad but the other operand does (x.mul_(w)): the op may have saved the
        # old x, which must not see this write
        old._vc, own = _counter_at(x._vc.value), True
    if own and sys.getrefcount(old) > 2 + (result is old):
        # the op's backward holds the old value (clamp_, x /= y with y needing a gradient):
        # it keeps a copy, as PyTorch saves the original self, instead of failing later
        old._data = old._data.copy()
        _tell_handlers("on_saved_copy", old, x)
    if GRAD.enabled and old.requires_grad and not result.requires_grad and \
            result.dtype.is_floating_point:
        # a value that ignores the old one (fill_, copy_ of a constant): keep x in the graph
        # with a zero gradient, as PyTorch's FillBackward does
        from ember.ops.select import zero_grad_from

        result = zero_grad_from(old, result)
    if DISPATCH.stack:
        _tell_handlers("before_write", old, result)
    if result._data.shape != x._data.shape:
        raise ShapeError(f"{name}: the result has shape {tuple(result.shape)} but the tensor "
                         f"written in place has shape {tuple(x.shape)}; in-place ops cannot "
                         "broadcast the tensor they write to")
    if result._data.dtype != x._data.dtype:
        if result.dtype.category > x.dtype.category:
            raise DTypeError(f"{name}: the result type {result.dtype.name} cannot be cast to "
                             f"the {x.dtype.name} tensor written in place")
        result = result.to(x.dtype)
    view = x._view
    if view is not None and GRAD.enabled and (result.requires_grad or view.base.requires_grad):
        _write_through_base(x, name, result)
    else:
        _write(x, name, result._data)
        if result.requires_grad:
            x._vc.value += 1
            _let_go(x, result._node)
            x._node, x._idx, x._requires_grad = result._node, result._idx, True
        else:
            count_write(x)
    if DISPATCH.stack:
        _tell_handlers("on_inplace", x, result)
    return x


def count_write(x: Tensor) -> None:
    """Counts a write into ``x``'s memory that gives ``x`` no history. A view without history,
    current, of a base without, stays current: replaying its chain would give the same
    nothing (each later use with grad enabled replayed it, ~3 µs)."""
    view = x._view
    current = view is not None and view.version == x._vc.value and \
        not x.requires_grad and not view.base.requires_grad
    x._vc.value += 1
    if current:
        view.version = x._vc.value


def _refuse_view_write(x: Tensor, name: str) -> None:
    """Refuses writes into views whose elements may overlap (``as_strided``, ``unfold`` with
    a step below its size: one write would land on an element more than once) and, with
    grad enabled, into views made under ``no_grad`` of a tensor that requires grad."""
    shape = tuple(x.shape)
    if any(prim.read_only_view for prim, _ in x._view.chain):
        raise GradError(f"{name}: cannot write into a view made by as_strided (shape "
                        f"{shape}): as_strided views are read-only in Ember, since their "
                        "elements may overlap. Hint: clone() the view, or write into the "
                        "tensor it was made from")
    if x._data.size and any(not s and n > 1 for s, n in zip(x._data.strides, x._data.shape)):
        # (expand's; into no elements, no two of them alias: a no-op write, as PyTorch's)
        raise _read_only(name, f"shape {shape}, strides {x.stride()}: more than one element "
                         "of the written-to tensor may refer to a single memory location")
    if may_overlap(x._data):
        raise GradError(f"{name}: cannot write into this view (shape {shape}, strides "
                        f"{x.stride()}): some of its elements share memory (unfold with a step "
                        "smaller than its size makes such views). Hint: clone() the view, or "
                        "write into the tensor it was made from")
    if GRAD.enabled and x._view.custom is not None:
        raise GradError(custom_view_message(x._view, "is being modified in place", name))
    if GRAD.enabled and x._view.without_grad:
        raise GradError(f"{name}: this view (shape {shape}) was made under no_grad from a "
                        "tensor that requires grad, and is being modified in place with grad "
                        "enabled: its history is not its base's. Hint: make the view outside "
                        "no_grad, or write under no_grad too, or clone() it")


def _counter_at(value: int) -> VersionCounter:
    vc = VersionCounter()
    vc.value = value
    return vc


def _refuse_leaf_write(x: Tensor, name: str) -> None:
    """Refuses (as PyTorch does) to write into a leaf that requires grad, or into a view of
    one: the write would give the leaf a history, and its gradient would be lost."""
    base = x._view.base if x._view is not None else None
    if x.requires_grad and x.grad_fn is None:  # (a stale view: of its new history)
        what = f"a leaf tensor that requires grad (shape {tuple(x.shape)})"
    elif base is not None and base.requires_grad and base._node is None:
        what = (f"a view (shape {tuple(x.shape)}) of a leaf tensor that requires grad "
                f"(shape {tuple(base.shape)})")
    else:
        return
    raise GradError(f"{name}: {what} cannot be modified in place, since the leaf's gradient "
                    "would be lost. Hint: do it under `with ember.no_grad():`, or on a clone")


def _tell_handlers(event: str, target: Tensor, source: Tensor) -> None:
    """Lets active transforms follow in-place ops: ``on_alias(alias, x)`` when the alias of
    the old ``x`` is made, ``on_saved_copy(alias, x)`` when the alias's memory became a copy
    of the old value (a trace binds it to the old variable, vmap copies every sample),
    ``before_write(alias, result)`` once ``result`` is computed (vmap copies what its tape
    saved), ``on_inplace(x, result)`` after ``result`` is written into ``x`` (forward mode
    moves tangents this way); for an in-place shape change (``t_``, ``unsqueeze_``, ...),
    ``on_reshape_alias(alias, x)`` when the alias its view op reads is made and
    ``on_reshaped(x, out)`` once ``x`` has become that view ``out``."""
    for handler in DISPATCH.stack:
        hook = getattr(handler, event, None)
        if hook is not None:
            hook(target, source)


def transforms_follow(x: Tensor, name: str, traceable: bool = True) -> bool:
    """Whether every active transform follows ``x`` changing its shape, strides or memory in
    place (``unsqueeze_``, ``t_``, ``as_strided_`` are ops a trace can follow; ``resize_``
    and ``set_``, ``traceable`` False, are not): each that can tell answers through its
    ``on_metadata_change(x, name, traceable)`` hook, raising its own error (a trace names the
    user's line) where it refuses; one with no such hook (vmap, forward mode) does not
    follow. Watchers (the profiler) and policies (autocast) compute eagerly: they follow."""
    for handler in DISPATCH.stack:
        if handler in DISPATCH.observers or handler in DISPATCH.ambient:
            continue
        hook = getattr(handler, "on_metadata_change", None)
        if hook is None:
            return False
        hook(x, name, traceable)
    return True


def _write(x: Tensor, name: str, values: Any) -> None:
    try:
        x._data[...] = values
    except ValueError as exc:  # a read-only broadcast view, typically
        if isinstance(exc, EmberError):  # (the array's own error, e.g. a lazy parameter's)
            raise
        alias = writable_alias(x._data)  # (a row of an expanded tensor, say: as PyTorch's)
        if alias is None:
            raise _read_only(name, str(exc)) from None
        alias[...] = values


def _read_only(name: str, why: str) -> GradError:
    return GradError(f"{name}: cannot write into this tensor ({why}). Hint: views made by "
                     "expand() or as_strided() (and their detached copies), and expanded "
                     "tensors loaded from a torch file, are read-only; clone() them before "
                     "writing")


def _write_through_base(x: Tensor, name: str, result: Tensor) -> None:
    """In-place write into a view: the base gets the history ``view_scatter(base, result)``."""
    base = x._view.base
    old_base = _wrap(base._data, base._device, base.requires_grad, base._node, base._idx,
                     base._vc)
    new_base = apply(ViewScatter, old_base, result, chain=x._view.chain)
    _write(base, name, new_base._data)
    base._vc.value += 1
    _let_go(base, new_base._node)
    base._node, base._idx, base._requires_grad = new_base._node, new_base._idx, True
    refresh_view(x)


def _let_go(x: Tensor, history: Any) -> None:
    """Before ``x`` takes ``history``: the nodes that hold the small non-leaf ``x`` let go of
    it (see ``let_go``; a leaf is alive anyway, a large input not held)."""
    if x._node is not None and x._data.nbytes < WORTH_DROPPING:
        let_go(x, history, x._node)


def needs_history(x: Tensor, *sources: Tensor) -> bool:
    """Whether writing into ``x`` must be recorded (a gradient or a transform can see it), or
    can go straight into memory (no grad mode, nothing requires grad, no trace)."""
    if DISPATCH.handler is not None:
        return True
    if not GRAD.enabled:
        return False
    return x.requires_grad or any(s.requires_grad for s in sources) or (
        x._view is not None and x._view.base.requires_grad)


def inplace_method(name: str, fn: Callable[..., Tensor],
                   ufunc: Any = None) -> Callable[..., Tensor]:
    """Makes ``x.name(*args)`` = ``inplace(x, name, lambda x: fn(x, *args))`` and binds it;
    with NumPy's ``ufunc`` (``fn``'s own), written straight into memory where
    :func:`_direct` may."""
    def op(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if ufunc is not None and len(args) == 1 and not kwargs and _direct(self, args[0], ufunc):
            return self
        return inplace(self, name, lambda old: fn(old, *args, **kwargs))
    op.__name__ = name
    op.__doc__ = f"In-place form of ``{fn.__name__}``: writes the result into ``self``."
    return method(name)(op)


def bind_inplace(ufuncs: dict[Callable, Any] | None = None, **ops: Callable[..., Tensor]) -> None:
    """``bind_inplace(add_=add, __iadd__=add)`` binds in-place methods for out-of-place ops;
    ``ufuncs`` maps such ops to their NumPy ufunc, for :func:`_direct`."""
    for name, fn in ops.items():
        inplace_method(name, fn, (ufuncs or {}).get(fn))


_DIRECT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_EXACT_INT = 1 << 24  # (an int of at most this size is exact in float32: one rounding either way)


def _direct(x: Tensor, other: Any, ufunc: Any) -> bool:
    """Writes ``ufunc(x, other)`` (add, sub, mul) into a float32/float64 ``x``'s memory and
    returns True where nothing would record it (no transform or handler, no gradient needed,
    ``x`` neither a view nor an inference tensor, writable) and ``other`` is a float, a small
    int or a tensor of ``x``'s dtype and device, of its shape or 0-d: the out-of-place op's
    values (NumPy buffers an overlapping ``other``), ~1.2 µs instead of ~4; else False."""
    data = x._data
    if type(data) is not np.ndarray or data.dtype not in _DIRECT_DTYPES or \
            x._view is not None or x._vc.inference or DISPATCH.stack or \
            type(x) in TENSOR_LIKE or not data.flags.writeable:
        return False
    kind = type(other)
    if kind is float or (kind is int and -_EXACT_INT <= other <= _EXACT_INT):
        if needs_history(x):
            return False
        operand = other
    elif kind is Tensor:
        operand = other._data
        if type(operand) is not np.ndarray or operand.dtype != data.dtype or \
                other._device != x._device or (operand.shape != data.shape and operand.ndim) or \
                needs_history(x, other):
            return False
    else:
        return False
    ufunc(data, operand, out=data)
    count_write(x)
    return True
