"""Elementwise arithmetic with sparse operands, as PyTorch's: ``add``/``sub`` (sparse + sparse
is sparse; dense + sparse, and compressed sparse + dense, are dense), ``mul`` (sparse times a
number, a dense tensor or a sparse tensor: sparse, with the pattern of the sparse operand or of
both), ``div`` (and ``floor_divide``) by a number or 0-d tensor, ``pow`` to a number, and
``abs``. An op ``f`` with ``f(a + b) != f(a) + f(b)`` (``abs``, ``pow``, rounded division)
coalesces a COO operand first, as PyTorch's: an uncoalesced element is the sum of its entries.

``ember.add``, ``sub``, ``mul``, ``div`` and ``floor_divide`` reach these through
:mod:`ember.ops.overrides` when an operand is sparse (a sparse tensor met as an array raises
:class:`~ember.sparse.tensor.SparseOperand`), so dense arithmetic pays nothing for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ember.layouts import sparse_coo
from ember.ops import arithmetic, linalg
from ember.ops.broadcast import broadcast_shapes
from ember.ops.convert import cast
from ember.ops.gather import index_add
from ember.ops.join import cat
from ember.ops.overrides import register
from ember.ops.public_op import calling_op
from ember.sparse.autograd import AUTOGRAD
from ember.sparse.convert import (
    coalesce,
    coo_index,
    element_keys,
    linear_index,
    long_index,
    to_compressed,
    to_coo,
    to_dense,
)
from ember.sparse.join import cat as sparse_cat
from ember.sparse.join import stack as sparse_stack
from ember.sparse.like import LIKE
from ember.sparse.ops import (
    any_,
    bmm,
    linear,
    matmul,
    norm,
    one_device,
    sparse_mask,
    with_values,
)
from ember.sparse.select import index_select, movedim, narrow_copy, permute, select, unsqueeze
from ember.sparse.tensor import BLOCKED, SparseTensor, not_supported
from ember.sparse.unary import UNARY
from ember.tensor import Tensor, _wrap

__all__ = ["abs", "add", "div", "floor_divide", "mul", "pow", "sub"]


def _coalesced(s: SparseTensor) -> SparseTensor:
    """``s`` with each element in one entry (a COO tensor coalesced), for an op that is not
    additive over the entries of an element."""
    return coalesce(s) if s.layout is sparse_coo else s


def _same_shape(op: str, a: Any, b: Any) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ShapeError(f"{op}: expected 'self' and 'other' to have same size, but self has "
                         f"size {list(a.shape)} while other has size {list(b.shape)} (as in "
                         "PyTorch: sparse addition does not broadcast)")


def add(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``input + alpha * other`` with a sparse operand: both sparse (one layout and shape):
    sparse, the entries of both (coalesced when both were); dense + sparse, or a compressed
    (CSR, CSC, BSR, BSC) sparse tensor + dense: dense. COO + dense raises, as in PyTorch.

    Example:
        >>> s = ember.eye(2).to_sparse()
        >>> (s + s).to_dense()
        tensor([[2., 0.],
                [0., 2.]])
        >>> ember.ones(2, 2) + s
        tensor([[2., 1.],
                [1., 2.]])
    """
    return _add("add", input, other, alpha)


def _add(op: str, input: Any, other: Any, alpha: Any) -> Any:
    one_device(op, input, other)
    if isinstance(input, SparseTensor) and isinstance(other, SparseTensor):
        return _sparse_sum(input, other, alpha)
    if isinstance(input, SparseTensor):
        if input.layout is sparse_coo or not isinstance(other, Tensor):
            raise ArgumentTypeError(f"add: add(sparse, dense) is not supported for a "
                                    f"{input.layout!r} tensor and {type(other).__name__} (as in "
                                    "PyTorch). Hint: use add(dense, sparse) instead")
        _same_shape("add", input, other)
        return arithmetic.add(to_dense(input), other, alpha=alpha)
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"add: a {type(input).__name__} plus a sparse tensor is not "
                                "supported (as in PyTorch). Hint: add a dense tensor of the "
                                "sparse tensor's shape")
    _same_shape("add", input, other)
    return arithmetic.add(input, to_dense(other), alpha=alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``input - alpha * other`` with a sparse operand (see :func:`add`).

    Example:
        >>> s = ember.eye(2).to_sparse()
        >>> (s - s * 3).to_dense()
        tensor([[-2.,  0.],
                [ 0., -2.]])
    """
    bools = [getattr(x, "dtype", None) is dtypes.bool_ for x in (input, other)]
    if any(bools):
        raise DTypeError(arithmetic._BOOL_SUB[all(bools)])
    return _add("sub", input, other, -alpha)


def _sparse_sum(input: SparseTensor, other: SparseTensor, alpha: Any) -> SparseTensor:
    if other.layout is not input.layout:
        raise not_supported(f"add of a {input.layout!r} tensor and a {other.layout!r} one",
                            input)
    if input.shape != other.shape:
        raise ShapeError(f"add: sparse tensors of shapes {tuple(input.shape)} and "
                         f"{tuple(other.shape)} differ")
    if input.sparse_dim() != other.sparse_dim():
        raise ShapeError(f"add: expected 'self' and 'other' to have same density, but 'self' "
                         f"has {input.sparse_dim()} sparse dimensions while 'other' has "
                         f"{other.sparse_dim()} sparse dimensions (as in PyTorch). Hint: "
                         "convert one with .to_dense().to_sparse(sparse_dim)")
    a, b = to_coo(input), to_coo(other)
    dtype = dtypes.result_type(input, other)
    scaled = cast(b._vals, dtype) if alpha == 1 else \
        arithmetic._scaled("add", "alpha", cast(b._vals, dtype), alpha, a._vals, b._vals)
    if input.layout is sparse_coo and a._coalesced and b._coalesced:
        nested = _nested_sum(a, b, cast(a._vals, dtype), scaled)
        if nested is not None:
            return nested
    values = cat([cast(a._vals, dtype), scaled])  # (as dense add: alpha * other in its dtype)
    ia, ib = a._index[0], b._index[0]  # (joined where they live: no host copy)
    index = _wrap(ia._device.xp.concatenate([ia._data, ib._data], axis=1), ia._device)
    total = SparseTensor(sparse_coo, a._size, (index,), values, False)
    if input.layout is not sparse_coo:
        blocksize = tuple(input._vals.shape[1:3]) if input.layout in BLOCKED else None
        return to_compressed(total, input.layout, blocksize)
    return coalesce(total) if a._coalesced and b._coalesced else total


def _nested_sum(a: SparseTensor, b: SparseTensor, va: Tensor, vb: Tensor
                ) -> SparseTensor | None:
    """``a + b`` (values ``va``, ``vb``) for coalesced COO tensors when one's pattern holds
    the other's (an ``add_`` on the same pattern, ...): one add onto the larger's values, its
    index kept (``a``'s when equal: ``a.add_(b)`` writes its values in place); else None."""
    ia, ib = a._index[0]._data, b._index[0]._data
    if ia.shape == ib.shape and (ia is ib or bool((ia == ib).all())):  # (the same pattern)
        return SparseTensor(sparse_coo, a._size, a._index, va + vb, True)
    ka, kb = element_keys(a), element_keys(b)
    xp = a._index[0]._device.xp
    for k_small, v_small, big, k_big, v_big in ((kb, vb, a, ka, va), (ka, va, b, kb, vb)):
        if k_small.shape[0] > k_big.shape[0] or (k_small.shape[0] and not k_big.shape[0]):
            continue
        step = k_small.shape[0] // 4  # (a few entries first: unrelated patterns refuse
        if step > 1 and not _within(xp, k_small[::step], k_big)[1]:  # fast; under 8, all)
            continue
        at, inside = _within(xp, k_small, k_big)
        if not inside:
            continue
        values = v_big + v_small if k_small.shape[0] == k_big.shape[0] else \
            index_add(v_big, 0, _wrap(at, a._index[0]._device), v_small)
        return SparseTensor(sparse_coo, a._size, big._index, values, True)
    return None


def _within(xp: Any, keys: Any, sorted_keys: Any) -> tuple[Any, bool]:
    """Where ``keys`` sit in ``sorted_keys``, and whether each is there."""
    at = xp.minimum(xp.searchsorted(sorted_keys, keys), max(sorted_keys.shape[0] - 1, 0))
    return at, bool((sorted_keys[at] == keys).all())


def mul(input: Any, other: Any) -> SparseTensor:
    """``input * other`` with a sparse operand, sparse: times a number or 0-d tensor, or a
    dense tensor that broadcasts to its shape, it keeps its pattern; times a sparse tensor of
    the same shape and layout, the entries specified in both (an uncoalesced operand's
    entries each times the other's element, as PyTorch's).

    Example:
        >>> s = ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
        >>> (s * ember.tensor([10.0, 100.0])).to_dense()
        tensor([[  0., 200.],
                [ 30.,   0.]])
    """
    one_device("mul", input, other)
    if not isinstance(input, SparseTensor):
        input, other = other, input
    if isinstance(other, SparseTensor):
        return _intersection(input, other)
    if isinstance(other, Tensor) and other.ndim:
        shape = tuple(broadcast_shapes(other.shape, input.shape, op="mul"))
        if shape != tuple(input.shape) and input.layout is sparse_coo and \
                shape[len(shape) - input.dense_dim():] == tuple(input._vals.shape[1:]):
            input = _broadcast_pattern(input, shape)
        if shape != tuple(input.shape):
            raise ShapeError(f"mul: a dense operand of shape {tuple(other.shape)} must "
                             f"broadcast to the sparse tensor's shape {tuple(input.shape)} "
                             "(Ember makes a larger sparse result of a COO tensor only, "
                             "broadcast along its sparse dimensions)")
        other = sparse_mask(other.expand(*input.shape), input)._vals
    return with_values(input, input._vals * other)


def _broadcast_pattern(s: SparseTensor, shape: tuple[int, ...]) -> SparseTensor:
    """The COO tensor ``s`` broadcast to ``shape`` along its sparse dimensions (new leading
    ones and those of size 1): each entry repeated at every position there, coalesced (``s``
    coalesced first), as PyTorch broadcasts a sparse operand of ``dense * sparse``."""
    s = coalesce(s)
    new = len(shape) - s.ndim
    index = np.concatenate([np.zeros((new, s._nnz()), dtype=np.int64), coo_index(s)])
    entry = np.arange(s._nnz())
    for d in range(index.shape[0]):
        if index.shape[1] and shape[d] != (1 if d < new else s.shape[d - new]):
            n = index.shape[1]
            index, entry = np.repeat(index, shape[d], axis=1), np.repeat(entry, shape[d])
            index[d] = np.tile(np.arange(shape[d]), n)
    order = np.argsort(linear_index(index, shape[:index.shape[0]]), kind="stable")
    return SparseTensor(sparse_coo, shape, (long_index(index[:, order]),),
                        s._vals.index_select(0, long_index(entry[order])), True)


def _intersection(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    if a.shape != b.shape or a.sparse_dim() != b.sparse_dim() or a.layout is not b.layout or \
            a.layout in BLOCKED:
        raise ShapeError(f"mul: sparse tensors must have the same shape, layout and sparse "
                         f"dimensions (as in PyTorch) and a non-block layout, got "
                         f"{a.layout!r} {tuple(a.shape)} (sparse_dim {a.sparse_dim()}) and "
                         f"{b.layout!r} {tuple(b.shape)} (sparse_dim {b.sparse_dim()})")
    layout = a.layout
    a, b = to_coo(a), to_coo(b)
    if a._coalesced and not b._coalesced:
        a, b = b, a
    b = coalesce(b)
    shape = a._size[:a.sparse_dim()]
    keys, where = linear_index(coo_index(b), shape), linear_index(coo_index(a), shape)
    at = np.minimum(np.searchsorted(keys, where), max(len(keys) - 1, 0))
    both = np.flatnonzero(keys[at] == where) if len(keys) else np.zeros(0, dtype=np.int64)
    picked = long_index(both)
    values = a._vals.index_select(0, picked) * b._vals.index_select(
        0, long_index(at[both]))
    index = long_index(coo_index(a)[:, both])
    out = SparseTensor(sparse_coo, a._size, (index,), values, a._coalesced)
    return out if layout is sparse_coo else to_compressed(out, layout)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
    """A sparse tensor divided by a number or 0-d tensor, sparse (its pattern kept; a COO
    tensor coalesced first when ``rounding_mode`` rounds, as PyTorch's).

    Example:
        >>> (ember.eye(2).to_sparse() / 4).values()
        tensor([0.2500, 0.2500])
    """
    _check_divisor("div: sparse division", input, other)
    if rounding_mode is not None:
        input = _coalesced(input)
    return with_values(input, arithmetic.div(input._vals, other, rounding_mode=rounding_mode))


def floor_divide(input: Any, other: Any) -> SparseTensor:
    """A sparse tensor divided by a number or 0-d tensor, rounded toward minus infinity
    (``div(input, other, rounding_mode="floor")``).

    Example:
        >>> (ember.tensor([[0, -5]]).to_sparse() // 2).values()
        tensor([-3])
    """
    _check_divisor("floor_divide: sparse floor division", input, other)
    return div(input, other, rounding_mode="floor")


def _check_divisor(what: str, input: Any, other: Any) -> None:
    if not isinstance(input, SparseTensor) or isinstance(other, SparseTensor) or \
            (isinstance(other, Tensor) and other.ndim):
        shape = list(getattr(other, "shape", []))
        raise ShapeError(f"{what} requires a scalar or zero-dim dense tensor divisor (got "
                         f"shape {shape} for divisor), as in PyTorch")


def pow(input: SparseTensor, exponent: Any) -> SparseTensor:  # noqa: A001 - PyTorch's name
    """Each element to a nonzero number ``exponent``, sparse (a COO tensor coalesced first,
    as PyTorch's: its repeated entries add up before the power).

    Example:
        >>> (ember.eye(2).to_sparse() * 3).pow(2).values()
        tensor([9., 9.])
    """
    if isinstance(exponent, (Tensor, SparseTensor)) or not isinstance(input, SparseTensor):
        raise NotImplementedError("pow: a sparse tensor takes only a number exponent (as in "
                                  "PyTorch). Hint: call .to_dense() first")
    if exponent == 0:
        raise ArgumentError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                            "the result tensor dense (as in PyTorch)")
    s = _coalesced(input)
    return with_values(s, s._vals.pow(exponent))


def abs(input: SparseTensor) -> SparseTensor:  # noqa: A001 - PyTorch's name
    """Each element's absolute value, sparse (a COO tensor coalesced first, as PyTorch's).

    Example:
        >>> ember.sparse_coo_tensor([[0, 0, 1]], [1.0, -3.0, 2.0], (2,)).abs().to_dense()
        tensor([2., 2.])
    """
    s = _coalesced(input)
    return with_values(s, s._vals.abs())


_IMPLEMENTATIONS = {arithmetic.add: add, arithmetic.sub: sub, arithmetic.mul: mul,
                    arithmetic.div: div, arithmetic.floor_divide: floor_divide,
                    linalg.matmul: matmul}
#: the one-tensor ops (their public functions are wrappers: found by name), and ``pow``
#: (``ember.square`` hands over as ``pow(s, 2)``)
_BY_NAME = {**UNARY, "pow": pow, "abs": abs, "permute": permute, "index_select": index_select,
            "unsqueeze": unsqueeze, "narrow_copy": narrow_copy, "_select": select,  # (ember.select)
            "norm": norm, "linear": linear, "any": any_, "cat": sparse_cat,
            "concat": sparse_cat, "concatenate": sparse_cat, "stack": sparse_stack,
            "bmm": bmm, "movedim": movedim}
#: ``ember.<name>(s, ...)`` is the method ``s.<name>(...)``, as PyTorch's one op for both
_AS_METHOD = ("sum", "t", "transpose", "swapaxes", "swapdims", "clone")


def _handle(op: Any, args: tuple, kwargs: dict) -> Any:
    impl = _IMPLEMENTATIONS.get(op) or AUTOGRAD.get(op) or _BY_NAME.get(op.__name__)
    if impl is not None:
        return impl(*args, **kwargs)
    flat = [x for arg in (*args, *kwargs.values())
            for x in (arg if isinstance(arg, (list, tuple)) else (arg,))]
    sparse = next(x for x in flat if isinstance(x, SparseTensor))
    called = calling_op()  # (``ember.floor`` of an integer tensor met it in ``clone``)
    if called in UNARY:
        return UNARY[called](sparse)
    if op.__name__ in _AS_METHOD and args and args[0] is sparse:
        return getattr(sparse, op.__name__)(*args[1:], **kwargs)
    if op.__name__ in LIKE:  # (after the above: ``isposinf`` of integers is a zeros_like)
        return LIKE[op.__name__](*args, **kwargs)
    raise not_supported(op.__name__, sparse)


register(SparseTensor, _handle)
