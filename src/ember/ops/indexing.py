"""Indexing: ``x[key]`` and ``x[key] = v``, index_put, and ``Tensor.nonzero`` (its primitive is in
``nonzero.py``).

Three primitives carry all of it. ``slice`` is basic indexing (ints, slices, None): a view.
``index`` is advanced indexing by integer tensors on chosen dimensions (NumPy's placement of
the new dimensions); ``index_put`` writes values (set, add or multiply) at a basic index and/or
integer tensors. Each is the other's gradient: the vjp of ``slice``/``index`` puts the output
gradient into zeros (accumulating on repeated indices) and the vjp of ``index_put`` reads it
back (gather/scatter in ``gather.py`` are the same primitives with ``arange`` grids). Boolean
masks become integer tensors through ``nonzero``, as in PyTorch.
"""

from __future__ import annotations

import functools
import operator
import warnings
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import GRAD
from ember.backend.memory_block import writable_alias
from ember.backend.meta import copy_out
from ember.errors import (
    ArgumentError,
    DTypeError,
    EmberError,
    GradError,
    IndexOutOfRange,
    IndexShapeError,
    IndexTypeError,
    OpError,
    ShapeError,
)
from ember.ops.add_at import add_at, write_at
from ember.ops.broadcast import broadcast_shapes, sum_to
from ember.ops.convert import cast
from ember.ops.creation import scalar_tensor, tensor, zeros
from ember.ops.fits import stored_number
from ember.ops.index_checks import check_index_range, out_of_range
from ember.ops.index_layout import INDEX_SAVED, in_torch_layout, take_in_torch_layout
from ember.ops.inplace import bind_inplace, inplace, needs_history, refuse_inference_write
from ember.ops.masked_put import check_put_dtype, masked_fill_write
from ember.ops.nonzero import Nonzero
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    apply_view,
    per_sample,
    primitive,
    refuse_limited,
)
from ember.tensor import Tensor, _wrap, method

__all__ = ["index_put", "nonzero"]

FULL = (None, None, None)  # the slice ``:`` in a normalized basic index


@functools.lru_cache(maxsize=512)
def _basic_key(index: tuple) -> tuple:
    """The NumPy key of a normalized basic index (cached); the Ellipsis keeps results arrays."""
    return tuple(slice(*e) if type(e) is tuple else e for e in index) + (Ellipsis,)


def _adv_key(arrays: tuple, dims: tuple) -> tuple:
    key: list = [slice(None)] * (dims[-1] + 1)
    for d, a in zip(dims, arrays, strict=True):
        key[d] = a
    return tuple(key)


def _basic_shape(shape: tuple, index: tuple, op: str = "slice") -> tuple:
    out, d = [], 0
    for e in index:
        if e is None:
            out.append(1)
            continue
        if d >= len(shape):
            raise IndexOutOfRange(f"{op}: too many indices for a tensor of dimension "
                                  f"{len(shape)}")
        if type(e) is tuple:
            out.append(len(range(*slice(*e).indices(shape[d]))))
        elif not -shape[d] <= e < shape[d]:
            raise out_of_range(op, e, d, shape[d])
        d += 1
    return tuple(out) + tuple(shape[d:])


def _with_new_dims(xp: Any, a: Any, index: tuple) -> Any:
    """``a[index]`` where ``index`` holds Nones, each new dim strided as PyTorch's unsqueeze
    (which its indexing applies left to right): the size times the stride of the dim of ``a``
    it stands before, or one element after the last (NumPy gives new dims stride 0)."""
    n = len(index)
    if index.count(None) == n:  # x[None]: mostly a reshape's strides
        view = a.reshape((1,) * n + a.shape)
        if view.strides == (a.shape[0] * a.strides[0] if a.ndim else a.itemsize,) * n + a.strides:
            return view
    view = a[_basic_key(tuple(e for e in index if e is not None))]
    strides, shape, d, o = list(view.strides), list(view.shape), 0, 0
    for e in index:
        if e is None:
            shape.insert(o, 1)
            strides.insert(o, a.shape[d] * a.strides[d] if d < a.ndim else a.itemsize)
            o += 1
        else:
            d += 1
            o += type(e) is tuple
    view = view.reshape(shape)  # (the new dims' strides NumPy's reshape picks: right, mostly)
    strides = tuple(strides)
    if view.strides == strides:
        return view
    # (over the memory of view's base, as views are: deepcopy and memory accounting follow
    # .base, and would take as_strided's wrapper for a new block; that serves meta's stand-ins)
    base = view.base if isinstance(view.base, np.ndarray) else view
    try:
        start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        out = np.ndarray(shape, view.dtype, base, start, strides)
    except (ValueError, TypeError, BufferError):
        return xp.lib.stride_tricks.as_strided(view, shape, strides, writeable=view.flags.writeable)
    if not view.flags.writeable:  # (an expanded input's)
        out.flags.writeable = False
    return out


def _index_shape(shape: tuple, index_shapes: list, dims: tuple) -> tuple:
    """The shape of advanced indexing: the broadcast index shape replaces the indexed dims
    in place when they are adjacent, and goes first otherwise (NumPy's and PyTorch's rule)."""
    try:
        b = broadcast_shapes(*index_shapes, op="index (the index tensors)")
    except ShapeError as exc:
        raise IndexShapeError(*exc.args) from None
    rest = tuple(s for i, s in enumerate(shape) if i not in dims)
    if dims[-1] - dims[0] == len(dims) - 1:
        return tuple(shape[:dims[0]]) + b + tuple(shape[dims[-1] + 1:])
    return b + rest


@primitive
class Slice(Primitive):
    """Basic indexing (ints, slices, None) as a view; ``index`` holds ints, None and
    ``(start, stop, step)`` tuples."""

    name = "slice"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, index):
        if None not in index:
            return a[_basic_key(index)]
        return _with_new_dims(xp, a, index)

    def infer(self, a, *, index):
        return TensorSpec(_basic_shape(a.shape, index), a.dtype)

    def vjp(self, ctx, g):
        x = ctx.inputs[0]
        base = zeros(x.shape, dtype=g.dtype, device=g.device)
        return apply(IndexPut, base, g, basic=ctx.params["index"], dims=(), mode="set")

    def grad_region(self, ctx):
        return _basic_key(ctx.params["index"])

    def jvp(self, ctx, da):
        return apply(Slice, da, **ctx.params)


@primitive
class Index(Primitive):
    """Advanced indexing: ``a[:, …, i0, …, i1]`` with integer tensors at ``dims``; ``layout``:
    in PyTorch's layout for ``x[key]`` (``index_layout.py``); ``wide``: IndexPut's, in vjp."""

    name = "index"
    saved_as = INDEX_SAVED  # (grad_fn._saved_indices and _saved_self_sym_sizes, as PyTorch's)
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves, copies or sums elements: real coefficients

    def reads(self, ctx, i):  # the index tensors (versions checked in backward), not ``a``
        return i > 0

    def forward(self, xp, a, *idx, dims, layout=False, wide=False):
        if layout and len(idx) == 1 and idx[0].ndim == 1:
            return take_in_torch_layout(xp, a, idx[0], dims[0])
        if len(idx) == 1:  # take is several times faster than fancy indexing
            out = xp.take(a, idx[0], axis=dims[0])
        else:
            out = a[_adv_key(idx, dims)]
        return in_torch_layout(out, a, idx, dims) if layout else out

    def infer(self, a, *idx, dims, layout=False, wide=False):
        for i in idx:
            if i.dtype.category != dtypes.INT:
                raise DTypeError(f"index: index tensors must be integer, got {i.dtype.name}")
        return TensorSpec(_index_shape(a.shape, [i.shape for i in idx], dims), a.dtype)

    def meta_layout(self, out, a, /, *idx, dims, layout=False, wide=False):
        return in_torch_layout(out, a, idx, dims) if layout else out

    def vjp(self, ctx, g):
        x, *idx = ctx.inputs
        gx = apply(IndexPut, zeros(x.shape, dtype=g.dtype, device=g.device), g, *idx, basic=(),
                   dims=ctx.params["dims"], mode="add", wide=ctx.params.get("wide", False))
        return (gx,) + (None,) * len(idx)

    def jvp(self, ctx, da, *_):
        return apply(Index, da, *ctx.inputs[1:], **ctx.params)


@primitive
class IndexPut(Primitive):
    """A copy of ``a`` with ``values`` written at ``a[basic][index tensors at dims]``: ``mode``
    "set" assigns, "add" accumulates (a half float step by step, as torch's index_put_; with
    ``wide`` in float32, as its scatter_add), "multiply" scales (``in_place``: into ``a``)."""

    name = "index_put"
    limited_dtypes = dtypes.ALL_LIMITED  # (with index tensors, only the float8s: see _put)
    complex_grad = True  # moves, copies or sums elements: real coefficients
    allocates = writes_input = True

    def reads(self, ctx, i):  # only the index tensors
        return i > 1

    def forward(self, xp, a, v, *idx, basic, dims, mode, in_place=False, wide=False):
        # (in ``a``'s layout, as eager's in-place write leaves it and torch's clone keeps it)
        out = a if in_place else xp.array(a, copy=True)
        view = out[_basic_key(basic)] if basic else out
        if not idx:
            if mode == "set":
                view[...] = v
            elif mode == "add":
                view += v
            else:
                view *= v
        elif mode == "set":
            view[_adv_key(idx, dims)] = v
        elif mode == "add":
            add_at(xp, view, _adv_key(idx, dims), v, wide)
        else:
            xp.multiply.at(view, _adv_key(idx, dims), v)
        return out

    def infer(self, a, v, *idx, basic, dims, mode, in_place=False, wide=False):
        target = _basic_shape(a.shape, basic, "index_put")
        if idx:
            target = _index_shape(target, [i.shape for i in idx], dims)
        try:
            fits = broadcast_shapes(v.shape, target) == target
        except ShapeError:
            fits = False
        if not fits:
            raise ShapeError(f"index_put: values of shape {tuple(v.shape)} cannot be broadcast "
                             f"to the indexed shape {tuple(target)}")
        return a

    def vjp(self, ctx, g):
        x, v, *idx = ctx.inputs
        p = ctx.params
        if p["mode"] == "multiply":
            raise GradError("index_put/scatter with reduce='multiply' has no gradient; use "
                            "reduce=None or 'add', or write the product out of place")
        gx = gv = None
        if x.requires_grad:
            gx = g if p["mode"] == "add" else apply(
                IndexPut, g, scalar_tensor(0, g.dtype, g.device), *idx, **p)
        if v.requires_grad:
            gv = _values_grad(read_index(g, p["basic"], idx, p["dims"]), v.shape)
        return (gx, gv) + (None,) * len(idx)

    def jvp(self, ctx, da, dv, *_):
        if ctx.params["mode"] == "multiply":
            raise GradError("index_put/scatter with reduce='multiply' has no forward-mode rule")
        return apply(IndexPut, da, dv, *ctx.inputs[2:], **ctx.params)


def read_index(x: Tensor, basic: tuple, arrays: tuple | list, dims: tuple,
               layout: bool = False) -> Tensor:
    """``x[basic][arrays at dims]``: what :class:`IndexPut` with the same key writes (in
    PyTorch's layout for ``x[key]`` with ``layout``)."""
    if basic:
        x = apply(Slice, x, index=basic)
    return apply(Index, x, *arrays, dims=dims, layout=layout) if arrays else x


def _values_grad(g: Tensor, shape: tuple) -> Tensor:
    extra = g.ndim - len(shape)
    if extra >= 0:
        return sum_to(g, shape)
    # values with more leading 1-dims than the indexed region (NumPy assignment allows it)
    return apply(Slice, sum_to(g, shape[-extra:]), index=(None,) * -extra)


_INT, _SLICE, _NONE, _ELLIPSIS, _BOOL, _MASK, _ARRAY = range(7)
_INDEX_DTYPES = (dtypes.int64, dtypes.int32, dtypes.uint8, dtypes.bool_)


def _classify(k: Any, x: Tensor, op: str) -> tuple[int, Any]:
    """One entry of a key: its kind and value (ints, bools and index tensors)."""
    if isinstance(k, Tensor):
        cat = k.dtype.category
        if k.dtype not in _INDEX_DTYPES and (k.ndim or cat != dtypes.INT):  # (0-d: an int)
            raise IndexTypeError(f"{op}: tensors used as indices must be integer or bool "
                                 f"tensors (int64, int32, uint8 or bool, as in PyTorch), got "
                                 f"{k.dtype.name}")
        if k.dtype is dtypes.uint8:  # a mask, as in PyTorch (deprecated there)
            k = cast(k, dtypes.bool_)
            cat = dtypes.BOOL
        if k.ndim == 0 and not (DISPATCH.handler is not None and per_sample(k)):
            return (_BOOL, bool(k.item())) if cat == dtypes.BOOL else (_INT, int(k.item()))
        # (a batched 0-d index under vmap holds one index per sample: a tensor index there,
        # as in torch.func.vmap, where eagerly it is an int)
        return (_MASK if cat == dtypes.BOOL else _ARRAY), k
    if isinstance(k, (bool, np.bool_)):
        return _BOOL, bool(k)
    if isinstance(k, (list, tuple, range, np.ndarray)):
        try:
            a = np.asarray(k)
        except ValueError:
            raise IndexTypeError(f"{op}: cannot index with the ragged {type(k).__name__} "
                                 f"{k!r}: its items have different lengths") from None
        if a.dtype == np.uint8:  # a mask, as a uint8 tensor (PyTorch converts it to one)
            return _classify(_wrap(x._device.xp.asarray(a), x._device), x, op)
        if a.dtype.kind == "b":
            a = a if a.ndim else a.item()
        elif a.dtype.kind in "ui" or a.size == 0:
            a = a.astype(np.int64) if a.ndim else int(a)
        else:
            raise IndexTypeError(f"{op}: cannot index with {type(k).__name__} of dtype "
                                 f"{a.dtype}; use integers, bools, slices, None, ... or "
                                 "integer/bool tensors")
        if isinstance(a, (bool, int)):
            return (_BOOL if isinstance(a, bool) else _INT), a
        return _classify(_wrap(x._device.xp.asarray(a), x._device), x, op)
    if hasattr(k, "__index__"):
        return _INT, k.__index__()
    raise IndexTypeError(f"{op}: cannot index with an object of type {type(k).__name__}; use "
                         "integers, slices, None, ..., lists or integer/bool tensors")


def _norm_slice(s: slice, op: str) -> tuple:
    """A slice as ``(start, stop, step)`` with its bounds as written (ints or None, not
    clamped to the size: ``x[:, :5]`` stays "up to 5" for a trace that export replays at other
    sizes); ``FULL`` for ``:``."""
    start, stop, step = s.start, s.stop, s.step
    if step is None and (start is None or type(start) is int) and (
            stop is None or type(stop) is int):  # (the common ``:``, ``a:b``)
        return (start or None, stop, None)
    try:
        if step is not None:
            step = operator.index(step)
            if step <= 0:
                raise ArgumentError(f"{op}: slice step must be greater than zero, got {step}. "
                                    "Hint: use flip() to reverse a dimension")
            if step == 1:
                step = None
        if start is not None:
            start = operator.index(start) or None
        if stop is not None:
            stop = operator.index(stop)
    except TypeError:
        raise TypeError(f"{op}: slice indices must be integers or None or have an __index__ "
                        f"method, got {s}") from None
    return (start, stop, step)


def _legacy_tuple(key: list) -> bool:
    """PyTorch's (and old NumPy's) reading of a short list index as a tuple of indices when
    any item is itself an index expression rather than a number."""
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(
        k, (slice, list, tuple, range, np.ndarray, Tensor)) for k in key)


def parse_key(x: Tensor, key: Any, op: str = "__getitem__") -> tuple[tuple, tuple, tuple]:
    """Reads an index expression into ``(basic, index tensors, dims)``: the basic part is
    applied first (ints select, as in PyTorch, so they never count as advanced indices),
    then the integer tensors index dims ``dims`` of its result."""
    shape = x._data.shape
    if type(key) is int:  # the common x[i]
        if not shape:
            raise IndexOutOfRange(f"{op}: a 0-d tensor cannot be indexed by an integer; use "
                                  "x.item() or x[()]")
        if not -shape[0] <= key < shape[0]:
            raise out_of_range(op, key, 0, shape[0])
        return (key,), (), ()
    if key is None:
        return (None,), (), ()
    if type(key) is list and _legacy_tuple(key):
        warnings.warn(f"{op}: a list holding lists, slices, None, ... or tensors indexes "
                      f"several dims, as in PyTorch (x[[a, b]] means x[a, b]); this reading "
                      f"is deprecated there. Hint: write x[tuple(seq)], or x[ember.tensor(seq)] "
                      f"for one index tensor", UserWarning, stacklevel=3)
        key = tuple(key)
    if type(key) is not tuple:
        key = (key,)
    items, used, ellipses = [], 0, 0
    for k in key:
        if k is None:
            items.append((_NONE, None))
        elif k is Ellipsis:
            ellipses += 1
            items.append((_ELLIPSIS, None))
        elif type(k) is slice:
            items.append((_SLICE, k))
            used += 1
        elif type(k) is int:
            items.append((_INT, k))
            used += 1
        else:
            kind, v = _classify(k, x, op)
            items.append((kind, v))
            used += v.ndim if kind == _MASK else kind in (_INT, _ARRAY)
    if ellipses > 1:
        raise IndexOutOfRange(f"{op}: an index can only have a single ellipsis (...)")
    if used > len(shape):
        raise IndexOutOfRange(f"{op}: too many indices for a tensor of dimension {len(shape)} "
                              f"(shape {tuple(shape)})")
    basic: list = []
    arrays: list = []
    dims: list = []
    d = o = 0  # the dim of x an entry indexes, and its dim in the basic result
    for kind, v in items:
        if kind == _INT:
            if not -shape[d] <= v < shape[d]:
                raise out_of_range(op, v, d, shape[d])
            basic.append(v)
            d += 1
        elif kind == _SLICE:
            basic.append(_norm_slice(v, op))
            d, o = d + 1, o + 1
        elif kind == _NONE:
            basic.append(None)
            o += 1
        elif kind == _ELLIPSIS:
            k = len(shape) - used
            basic.extend([FULL] * k)
            d, o = d + k, o + k
        elif kind == _BOOL:  # a 0-d mask: a new dim, indexed by [0] (True) or [] (False)
            basic.append(None)
            arrays.append(_wrap(x._device.xp.zeros(int(v), np.int64), x._device))
            dims.append(o)
            o += 1
        elif kind == _MASK:
            k = v.ndim
            if tuple(v.shape) != tuple(shape[d:d + k]):
                j = next(j for j in range(k) if v.shape[j] != shape[d + j])
                raise IndexOutOfRange(f"{op}: the shape of the mask {tuple(v.shape)} at index "
                                      f"{j} does not match the shape of the indexed tensor "
                                      f"{tuple(shape)} at index {d + j}")
            if DISPATCH.handler is not None:  # a transform sees the data-dependent step
                apply(Nonzero, v)
            # (on the mask's device: a CPU mask may index a meta tensor, as in PyTorch)
            for j, nz in enumerate(v._device.xp.nonzero(v._data)):
                arrays.append(_wrap(nz, v._device))
                dims.append(o + j)
            basic.extend([FULL] * k)
            d, o = d + k, o + k
        else:
            arrays.append(check_index_range(v, shape[d], d, op, negative=True))
            dims.append(o)
            basic.append(FULL)
            d, o = d + 1, o + 1
    while basic and basic[-1] == FULL:
        basic.pop()
    return tuple(basic), tuple(arrays), tuple(dims)


@method("__getitem__")
def _getitem(self: Tensor, key: Any) -> Tensor:
    """``x[key]``: ints, slices with positive steps, None, ``...``, integer tensors or lists
    (advanced indexing) and boolean masks, with PyTorch's rules; basic indexing is a view.

    Example:
        >>> x = ember.arange(12).reshape(3, 4)
        >>> x[1:, [0, 2]]
        tensor([[ 4,  6],
                [ 8, 10]])
    """
    basic, arrays, dims = parse_key(self, key)
    if not arrays:
        return apply_view(Slice, self, index=basic)
    return read_index(self, basic, arrays, dims, layout=True)


def as_values(value: Any, like: Tensor, op: str, unchecked: bool = False) -> Tensor:
    """``value`` as a tensor of ``like``'s dtype and device (what an assignment writes); a number
    it cannot hold is an error as in PyTorch, but not in an ``unchecked`` write to a half float."""
    if isinstance(value, Tensor):
        if value.is_meta and not like.is_meta:
            copy_out(op, like.device)
        return cast(value, like.dtype)
    if isinstance(value, (int, float, bool, complex, np.number, np.bool_)):
        number = stored_number(op, value, like.dtype, unchecked)
        return scalar_tensor(number, like.dtype, like.device)
    return tensor(value, dtype=like.dtype, device=like.device)


def _put(x: Tensor, op: str, basic: tuple, arrays: tuple, dims: tuple, values: Tensor,
         mode: str) -> Tensor:
    """Writes ``values`` into ``x`` in place; directly when no gradient or trace can see it."""
    if x._vc.inference and not GRAD.inference:
        refuse_inference_write(x, op)
    if arrays:  # PyTorch's index_put, unlike its copy into a slice, takes few limited dtypes
        refuse_limited(op, x.dtype, dtypes.SIGNED_FLOAT8)
    if not needs_history(x, values):
        view = x._data[_basic_key(basic)] if basic else x._data
        key = _adv_key(tuple(a._data for a in arrays), dims) if arrays else ...
        try:
            if mode == "set":  # (the common x[i] = v, with no call)
                view[key] = values._data
            else:
                write_at(x._device.xp, view, key, values._data, mode, bool(arrays))
        except ValueError as exc:
            if isinstance(exc, EmberError):  # (the array's own error, e.g. a lazy parameter's)
                raise
            alias = None if view.flags.writeable else writable_alias(view)  # (an expanded
            try:  # tensor's row, say, whose elements share no memory: PyTorch writes there)
                write_at(x._device.xp, alias, key, values._data, mode, bool(arrays), exc)
            except ValueError:
                if not view.flags.writeable and alias is None:
                    raise OpError(f"{op}: cannot write into this tensor (a read-only view made "
                                  "by expand() or as_strided(), or an expanded tensor loaded "
                                  "from a torch file); clone() it first") from None
                target = read_index(x, basic, arrays, dims).shape
                raise ShapeError(f"{op}: values of shape {tuple(values.shape)} cannot be "
                                 f"broadcast to the indexed shape {tuple(target)}") from exc
        x._vc.value += 1
        return x
    return inplace(x, op, lambda old: apply(IndexPut, old, values, *arrays, basic=basic,
                                            dims=dims, mode=mode))


@method("__setitem__")
def _setitem(self: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` in place; ``value`` (a tensor or a number) broadcasts to the indexed
    region and is cast to ``x``'s dtype (through index tensors, as PyTorch: ``masked_put``).
    Gradients flow to ``value`` and to the rest of ``x``.

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x[:, [0, 2]] = 1.0
        >>> x
        tensor([[1., 0., 1.],
                [1., 0., 1.]])
    """
    values = as_values(value, self, "__setitem__", True)  # (x[False] = v: converts, no write)
    if values is not value and isinstance(value, Tensor):  # (cast: not through index tensors)
        check_put_dtype("__setitem__", self, key if type(key) is tuple else (key,), value)
    if key is False or DISPATCH.handler is not None and masked_fill_write(self, key, values):
        return
    basic, arrays, dims = parse_key(self, key, "__setitem__")
    _put(self, "__setitem__", basic, arrays, dims, values, "set")


@method()
def index_put(input: Tensor, indices: tuple, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (a tuple of integer or
    bool tensors, None meaning a whole dimension); ``accumulate`` adds, summing repeats.

    Example:
        >>> ember.zeros(3).index_put((ember.tensor([0, 0, 2]),), ember.tensor(1.0), True)
        tensor([2., 0., 1.])
    """
    if isinstance(values, Tensor) and values._data.dtype != input._data.dtype:
        check_put_dtype("index_put", input, indices, values, accumulate)
    key = tuple(slice(None) if i is None else i for i in indices)
    basic, arrays, dims = parse_key(input, key, "index_put")
    if arrays:
        refuse_limited("index_put", input.dtype, dtypes.SIGNED_FLOAT8)
    return apply(IndexPut, input, as_values(values, input, "index_put"), *arrays, basic=basic,
                 dims=dims, mode="add" if accumulate else "set")


@method()
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of the nonzero entries: an ``(n, ndim)`` int64 tensor, or with
    ``as_tuple`` one 1-D tensor per dimension (what ``x[mask]`` uses). No gradient.

    Example:
        >>> ember.tensor([[0, 1], [2, 0]]).nonzero()
        tensor([[0, 1],
                [1, 0]])
    """
    out = apply(Nonzero, input)
    if not as_tuple:
        return out
    if input.ndim == 0:
        return (_wrap(input._device.xp.zeros(out.shape[0], np.int64), input.device),)
    return tuple(apply(Slice, out, index=(FULL, d)) for d in range(input.ndim))


bind_inplace(index_put_=index_put)

