"""How gradients add up in a backward pass: the contributions to one tensor's gradient summed
(in place into a buffer the engine alone holds, when nothing records the sums; sparse
gradients with dense ones), and a finished leaf gradient accumulated into ``.grad`` as PyTorch
does (in place, so a reference to ``.grad`` sees the sum, and never aliasing another one)."""

from __future__ import annotations

import threading
from typing import Any

from ember.autograd.grad_mode import GRAD, no_grad, refuse_inference_write
from ember.backend.copies import contiguous as contiguous_copy
from ember.grad_assign import SAME_DTYPE
from ember.layouts import array_dense_in
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor, _wrap

# sums into ``.grad`` hold one of these (picked by the tensor's id), as each of PyTorch's
# AccumulateGrad nodes holds a mutex: backward passes in several threads that reach one leaf
# then add every gradient (NumPy lets go of the GIL inside a big add, so two read-modify-writes
# of one ``.grad`` at once lost one; so did two first gradients, each stored as the whole)
_LEAF_LOCKS = tuple(threading.Lock() for _ in range(64))


def grad_as(g: Any, t: Any) -> Any:
    """A gradient in its input's dtype; a real input of a complex gradient takes its real
    part (the imaginary part is the derivative along a direction the input cannot move)."""
    from ember.ops.convert import cast

    return cast(g, t.dtype)


def add_grad(node_grads: dict, leaf_grads: dict, t: Any, g: Any, edge: tuple | None = None,
         region: Any = None) -> None:
    """Adds ``g`` to the gradient of ``t`` (through ``edge``, as recorded, when given); with a
    ``region``, ``g`` is the gradient of ``t[region]`` only, zero elsewhere."""
    node, idx = (t._node, t._idx) if edge is None else edge
    if node is None:
        leaf = t if edge is None else idx  # (the recorded leaf: a node's input may be a copy
        #                                     of it, under allow_mutation_on_saved_tensors)
        entry = leaf_grads.get(id(leaf))
        if entry is None:
            entry = leaf_grads[id(leaf)] = [leaf, None]
        entry[1] = _sum(entry[1], g, t, region)
        return
    slots = node_grads.get(node)
    if slots is None:
        slots = node_grads[node] = [None] * node.prim.nout
    acc = slots[idx]
    slots[idx] = g if acc is None and region is None else _sum(acc, g, t, region)


class Sum:
    """A gradient sum the engine made and alone holds: further terms go into it in place.
    Unwrapped (:func:`unwrap_sum`) when its node runs or its leaf is finished."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor


def unwrap_sum(g: Any) -> Any:
    return g.tensor if type(g) is Sum else g


def sums_in_place() -> bool:
    """Whether sums may be written in place: plain eager values (no trace or transform
    active, observers such as the profiler aside) and no ``create_graph`` (whose sums are
    recorded ops)."""
    return not GRAD.enabled and DISPATCH.only_observers()


def _sum(acc: Any, g: Any, t: Any, region: Any) -> Any:
    """``acc + g``, or ``acc`` plus ``g`` at ``region`` of ``t`` (only with in-place sums)."""
    if region is not None:
        if type(acc) is not Sum:
            buf = acc.clone() if acc is not None else \
                _wrap(g._device.xp.zeros(t.shape, dtype=g._data.dtype), g._device)
            acc = Sum(buf)
        acc.tensor._data[region] += g._data
        return acc
    if acc is None:
        return g
    if not isinstance(g, Tensor) or not isinstance(unwrap_sum(acc), Tensor):
        return _sum_with_sparse(unwrap_sum(acc), g)
    in_place = sums_in_place()
    if type(acc) is Sum:
        if in_place:
            acc.tensor._data += g._data
            return acc
        acc = acc.tensor
    total = acc + g
    return Sum(total) if in_place else total


def _sum_with_sparse(a: Any, b: Any) -> Any:
    """``a + b`` where one is a sparse gradient: sparse when both are (their entries
    together, uncoalesced, as PyTorch's), else dense."""
    if isinstance(a, Tensor):
        return a + b.to_dense()
    return a + b if not isinstance(b, Tensor) else b + a.to_dense()


def _writeable(a: Any) -> bool:
    """Whether ``a`` is a backend array that may be written (not a read-only broadcast, nor
    the placeholder of a traced tensor)."""
    flags = getattr(a, "flags", None)
    return flags is not None and getattr(flags, "writeable", True)


def _dense_order(a: Any) -> list[int] | None:
    """The dimensions of array ``a`` from outermost to innermost in memory when its elements
    lie densely without overlap (in any order), else None."""
    order = sorted(range(a.ndim), key=lambda d: -a.strides[d])
    return order if array_dense_in(a, order) else None


def _laid_out_like(g: Tensor, t: Any) -> Tensor:
    """A first gradient ``g`` of ``t`` in the layout PyTorch gives ``.grad``: ``t``'s strides
    when ``t`` is dense (optimizer updates then run over memory laid out as the parameter's,
    a convolution's permuted weight gradient made SGD 4× slower), else C order."""
    a, like = g._data, t._data
    if a.strides == like.strides or (a.flags.c_contiguous and like.flags.c_contiguous):
        return g
    if like.flags.c_contiguous and 1 not in like.shape:  # (the usual parameter: C order and,
        return _c_copy(g)  # without size-1 dims, C strides: no order to find)
    order = _dense_order(like)
    if order is None or order == list(range(a.ndim)):  # (C order: no permuted view)
        return g if a.flags.c_contiguous else _c_copy(g)
    if all(a.shape[d] == 1 or a.strides[d] * like.itemsize == like.strides[d] * a.itemsize
           for d in range(a.ndim)):
        return g
    inverse = sorted(range(a.ndim), key=order.__getitem__)
    laid = g.permute(order).contiguous().permute(inverse)
    # eager: a tensor of its own, not a view of the temporary (as PyTorch's .grad; later sums
    # into a view took add_'s slow path), unless it has history (create_graph)
    if DISPATCH.handler is None and not laid.requires_grad:
        return _wrap(laid._data, laid._device)
    return laid


def _c_copy(g: Tensor) -> Tensor:
    """``g.contiguous()`` of a gradient not in C order: in plain eager code (no handler, no
    history) the backend's copy wrapped directly, without the op's dispatch (~1 µs of every
    sum's or mean's backward into a leaf); the same bits."""
    dev = g._device
    if DISPATCH.handler is None and type(g) is Tensor and not g.requires_grad and \
            not dev.is_meta:
        return _wrap(contiguous_copy(dev.xp, g._data), dev)
    return g.contiguous()


def grad_lock(t: Any) -> threading.Lock:
    """The lock that sums into ``t.grad`` hold (see ``_LEAF_LOCKS``)."""
    return _LEAF_LOCKS[id(t) >> 4 & 63]


def accumulate_grad(t: Any, g: Any, create_graph: bool, owners: set | None = None) -> None:
    """Adds ``g`` into ``t.grad``: in place, as PyTorch does, so a reference to ``.grad``
    sees the sum (a new tensor under ``create_graph``, under transforms, or where the old one
    cannot take it).
    A first gradient whose memory another ``.grad`` (or the caller's ``gradient=``) already
    holds is copied, so no two ``.grad`` ever alias."""
    want = getattr(t, "_grad_dtype", SAME_DTYPE)  # (a leaf's grad_dtype, when set: cast to it)
    if want is not SAME_DTYPE and want is not None and isinstance(g, Tensor) and \
            g.dtype is not want:
        from ember.ops.convert import cast

        g = cast(g, want)
    lock = grad_lock(t)
    lock.acquire()  # (not ``with``: ~0.1 µs less a leaf)
    try:
        _accumulate(t, g, create_graph, owners)
    finally:
        lock.release()


def _accumulate(t: Any, g: Any, create_graph: bool, owners: set | None) -> None:
    old = t._grad if isinstance(t, Tensor) else t.grad  # (the slot: no non-leaf warning)
    if not isinstance(g, Tensor) or (old is not None and not isinstance(old, Tensor)):
        g = g if create_graph else g.detach()
        t.grad = g if old is None else _sum_with_sparse(g, old)  # (new first, as PyTorch)
        return
    if old is not None:  # (a sum into it reads g's values only: g needs no detach)
        if create_graph:
            t.grad = old + g
        elif old._data.shape == g._data.shape and old.dtype is g.dtype and \
                _writeable(old._data) and (not DISPATCH.stack or DISPATCH.only_observers() or (
                    old._view is None and DISPATCH.grads_in_place())):
            # (a trace records in-place sums into whole tensors, not into a view of another
            # one, such as a gradient bucket's slice: that .grad is replaced there)
            if old._vc.inference and not GRAD.inference:
                refuse_inference_write(old, "backward (the sum into .grad)")
            dev = old._device
            if not DISPATCH.stack and old._view is None and type(old) is Tensor and \
                    g._device is dev and not dev.is_meta:
                # plain eager: add_'s own sum and version bump, without the in-place op's
                # machinery (no history to move, no handler to tell)
                dev.xp.add(old._data, g._data, out=old._data)
                old._vc.value += 1
            else:
                with no_grad():
                    old.add_(g)
        else:
            t.grad = old.detach() + g.detach()
        return
    if not create_graph:
        g = g.detach()
    if t._node is None:
        g = _laid_out_like(g, t)
        if create_graph and g._view is not None:  # (a tensor of its own, as PyTorch's clone:
            g = g.clone()  # zero_grad(set_to_none=False) detaches .grad in place, not a view)
    elif not g._data.flags.c_contiguous:  # a retained non-leaf's: C order, not the tensor's
        g = g.contiguous()
    if owners is not None:
        a = g._data
        owner = id(a if a.base is None else a.base)
        if owner in owners or not a.flags.writeable:  # shared, or a read-only broadcast
            g = g.clone()
        else:
            owners.add(owner)
    t.grad = g
