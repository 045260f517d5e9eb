"""Padding, as ``torch.nn.functional.pad``: constant (negative pads crop), reflect, replicate
and circular.

Constant padding writes the (cropped) input into a filled tensor with ``index_put``. The other
modes read the input at computed positions (one ``arange``-built vector per padded dim): padded
dims adjacent in memory with one ``pad_gather`` over them flattened, whose backward rebuilds the
positions from its parameters and keeps nothing (PyTorch's keeps the input for reflect and
replicate), else with ``index``; gradients accumulate where a position is read more than once.
Reflect and replicate pads (none negative) go by slices instead (``np.pad`` forward,
``pad_fold`` backward: :mod:`ember.ops.pad_fold`).

Results are laid out as PyTorch's: channels-last for a channels-last input (circular mode
aside, which PyTorch builds from copies in C order), else C order.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from math import prod as _product

import numpy as np

from ember import dtypes
from ember.backend import CPU, Device
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError, ValueOverflow
from ember.layouts import (
    contiguous_format,
    memory_format,
    order_of,
    suggested_format,
)
from ember.ops.convert import HALF, contiguous, float32_under_autocast
from ember.ops.creation import full, zeros
from ember.ops.forwarding import check_tensors
from ember.ops.indexing import FULL, Index, IndexPut, Slice
from ember.ops.int_args import refused_ints
from ember.ops.pad_fold import fold_slices, folds, pad_slices
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.shape import permute, reshape, reshape_view
from ember.tensor import Tensor, _wrap

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")

# autocast runs these pads in float32, as on PyTorch's CPU float32 list (reflection_pad1d/2d,
# replication_pad1d/2d/3d): mode -> most padded dims
_AUTOCAST_FLOAT32_DIMS = {"reflect": 2, "replicate": 3}


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: complex | None = None) -> Tensor:
    """``input`` padded on its last ``len(pad) // 2`` dimensions. ``pad`` lists the amounts
    last dimension first: ``(left, right)``, then ``(top, bottom)``, …

    ``mode="constant"`` fills with ``value`` (0 by default); ``"reflect"`` mirrors without
    repeating the edge, ``"replicate"`` repeats the edge, ``"circular"`` wraps around. A
    negative amount crops, in every mode as in PyTorch: circular padding wraps around what is
    left once cropped, reflect and replicate read the uncropped input. As in PyTorch, the
    non-constant modes pad the last 1, 2 or 3 dimensions of an input with one or two more
    (channels and an optional batch), and reflect and replicate take no empty dimension but
    the batch. Circular padding may not wrap around more than once what is left once cropped
    (PyTorch reads memory it has not written there).

    Example:
        >>> ember.pad(ember.tensor([[1, 2, 3]]), (2, 1), mode="reflect")
        tensor([[3, 2, 1, 2, 3, 2]])
    """
    check_tensors("pad", input=input)
    try:
        if isinstance(pad, (str, bytes)) or bool in map(type, pad):  # (would read as ints)
            raise TypeError
        amounts = tuple(operator.index(p) for p in pad)
    except TypeError as exc:
        raise refused_ints(pad, "pad", "pad", exc) from None
    if len(amounts) % 2:
        raise ShapeError(f"pad: padding length must be divisible by 2, got {len(amounts)} "
                         f"amounts {amounts}")
    k = len(amounts) // 2
    if k > input.ndim:
        raise ShapeError(f"pad: padding length too large: {amounts} pads {k} dimensions but "
                         f"the input has shape {tuple(input.shape)}")
    # (dim, before, after) for the padded dims, in increasing dim order
    pairs = [(input.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(k)][::-1]
    for d, before, after in pairs:
        _check_crop(input.shape, d, before, after, mode)
    if mode == "constant":
        grows = any(before > 0 or after > 0 for _, before, after in pairs)
        return _constant(input, pairs, _fill_value(input, value, grows))
    if mode not in _MODES:
        raise ArgumentError(f"pad: unknown padding mode {mode!r}; expected one of {_MODES}")
    if value is not None and value != 0:
        raise ArgumentError(f"pad: mode {mode!r} takes no fill value (got value={value})")
    _check_non_constant(tuple(input.shape), pairs, mode)
    gather = _gather_pad_float32 if k <= _AUTOCAST_FLOAT32_DIMS.get(mode, 0) else _gather_pad
    return gather(input, pairs, mode,
                  contiguous_format if mode == "circular" else suggested_format(input._data))


def _fill_value(input: Tensor, value: object, grows: bool) -> object:
    """The constant mode's fill: a number; a complex one (as ``constant_pad_nd`` takes) for a
    real input only when its imaginary part is zero, which is dropped; checked to fit the
    dtype where something is filled (``grows``; else 0, unread, as PyTorch's)."""
    if value is None:
        return 0
    if not isinstance(value, (int, float, complex, np.number)):
        raise ArgumentTypeError(f"pad: value must be a number, got {type(value).__name__} "
                                f"{value!r}")
    if isinstance(value, (complex, np.complexfloating)) and not input.dtype.is_complex:
        if value.imag != 0:
            raise ArgumentError(f"pad: the fill value {value!r} has an imaginary part, which a "
                                f"{input.dtype.name} input cannot hold")
        return value.real
    if not grows:
        return 0
    if type(value) is int and not -2**63 <= value < 2**64 and (
            input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is dtypes.bool):
        return float(value)  # (PyTorch's pad reads a number beyond 64 bits as a double)
    if isinstance(value, (int, np.integer)) and value < 0 and input.dtype.np.kind == "u":
        # (full and fill_ wrap -1 to 255 in uint8, as PyTorch's; its pad refuses it)
        raise ValueOverflow(f"pad: the fill value {value} cannot be converted to "
                            f"{input.dtype.name} without overflow (its range is [0, "
                            f"{np.iinfo(input.dtype.np).max}]). Hint: pad a signed dtype")
    return value


def unsigned_wrapped(input: Tensor, value: object) -> object:
    """``constant_pad_nd``'s fill: a negative int for an unsigned ``input`` wrapped as
    ``full`` wraps it (-1 is 255 in uint8, down to minus the dtype's maximum), as PyTorch's
    ``constant_pad_nd`` does where its ``F.pad`` refuses it."""
    if isinstance(value, (int, np.integer)) and value < 0 and isinstance(input, Tensor) and \
            input.dtype.np.kind == "u" and -np.iinfo(input.dtype.np).max <= value:
        return int(value) + int(np.iinfo(input.dtype.np).max) + 1
    return value


def _cropped(n: int, before: int, after: int) -> int:
    """The size left of ``n`` once the negative amounts have cropped it."""
    return n - max(-before, 0) - max(-after, 0)


def _check_crop(shape: tuple, d: int, before: int, after: int, mode: str) -> None:
    """Negative amounts may not leave a negative size; in the constant and circular modes,
    which crop first and pad the rest, they may not crop more than the whole dimension."""
    n = shape[d]
    if n + before + after < 0:
        raise ShapeError(f"pad: the input size {n} at dimension {d}, plus padding {before} and "
                         f"{after}, gives a negative output size (input shape {tuple(shape)})")
    if mode in ("constant", "circular") and _cropped(n, before, after) < 0:
        raise ShapeError(f"pad: negative padding ({before}, {after}) crops "
                         f"{max(-before, 0) + max(-after, 0)} elements from dimension {d} of "
                         f"size {n} (input shape {tuple(shape)}); it can crop at most {n}")


class PadRankError(ShapeError, NotImplementedError):
    """A non-constant pad of a number of dimensions PyTorch has no kernel for (its
    ``NotImplementedError``)."""


def _check_non_constant(shape: tuple, pairs: list, mode: str) -> None:
    """PyTorch's checks of the reflect, replicate and circular modes: 1, 2 or 3 padded
    dimensions of an input with one or two more (channels, then an optional batch); for
    reflect and replicate, every dimension but the batch non-empty and some padded
    dimension left non-empty."""
    k, ndim = len(pairs), len(shape)
    if k > 3 or ndim not in (k + 1, k + 2):
        raise PadRankError(
            f"pad: {mode} padding of {2 * k} amounts is not supported for a {ndim}-D input "
            f"(shape {shape}); the non-constant modes pad the last 1, 2 or 3 dimensions of a "
            f"2-D/3-D, 3-D/4-D or 4-D/5-D input (2, 4 or 6 amounts). Hint: reshape the input "
            f"to (batch, channels, *padded) first")
    if mode == "circular":
        return
    if 0 in shape[ndim - k - 1:]:
        raise ShapeError(f"pad: {mode} padding needs non-empty dimensions (only a batch "
                         f"dimension may be 0: a {k + 2}-D input's first), got shape {shape}")
    if all(shape[d] + before + after < 1 for d, before, after in pairs):
        sizes = [shape[d] + before + after for d, before, after in pairs]
        raise ShapeError(f"pad: {mode} padding {[(b, a) for _, b, a in pairs]} of shape "
                         f"{shape} leaves output sizes {sizes} for the padded dimensions: "
                         f"the input is too small (some must stay at least 1)")


def _constant(x: Tensor, pairs: list, value: float) -> Tensor:
    fmt = suggested_format(x._data)
    if fmt is not contiguous_format:  # padded in fmt's order of dims, viewed back
        dims, inverse = order_of("pad", fmt, tuple(x.shape))
        moved = [(dims.index(d), before, after) for d, before, after in pairs]
        return permute(_constant(permute(x, dims), moved, value), inverse)
    shape = x.shape
    crop = [FULL] * x.ndim
    for d, before, after in pairs:
        n = shape[d]
        start, stop = max(-before, 0), n - max(-after, 0)
        if (start, stop) != (0, n):
            crop[d] = (start, stop, 1)
    if any(c != FULL for c in crop):
        x = apply(Slice, x, index=tuple(crop))
    out_shape = list(x.shape)
    place = [FULL] * x.ndim
    for d, before, after in pairs:
        lo = max(before, 0)
        place[d] = (lo, lo + out_shape[d], 1)
        out_shape[d] += lo + max(after, 0)
    base = full(tuple(out_shape), value, dtype=x.dtype, device=x.device)
    return apply(IndexPut, base, x, basic=tuple(place), dims=(), mode="set")


def _gather_pad(x: Tensor, pairs: list, mode: str, fmt: memory_format) -> Tensor:
    index_device = _index_device(x._device)
    xp, shape = index_device.xp, x._data.shape
    positions = []
    for d, before, after in pairs:
        n = shape[d]
        if mode == "reflect" and (before >= n or after >= n) and (before > 0 or after > 0):
            raise ShapeError(f"pad: reflect padding must be smaller than the padded dimension: "
                             f"got ({before}, {after}) for dimension {d} of size {n} (input "
                             f"shape {tuple(x.shape)})")
        kept = _cropped(n, before, after)
        if mode == "circular" and (before > kept or after > kept):
            raise ShapeError(f"pad: circular padding ({before}, {after}) wraps around dimension "
                             f"{d} of size {n} ({kept} once cropped) more than once")
        positions.append(_positions(xp, n, before, after, mode))
    # one gather (``take``, whose result is C-ordered) over the padded dims flattened, in
    # ``fmt``'s order of dims: the result is laid out as PyTorch's
    dims, inverse = (tuple(range(len(shape))), None) if fmt.dims is None else \
        order_of("pad", fmt, shape)
    padded = [d for d, _, _ in pairs]
    first = min(dims.index(d) for d in padded)
    inner = dims[first:first + len(padded)]
    if sorted(inner) != sorted(padded):
        return contiguous(apply(Index, x, *_outer(positions, index_device), dims=tuple(padded)),
                          fmt)  # (padded dims apart in memory: gather, then lay out)
    xt = x if inverse is None else permute(x, dims)
    plan = tuple(next(p for p in pairs if p[0] == d) for d in inner)
    plan = tuple((shape[d], before, after) for d, before, after in plan)
    lead, tail = xt._data.shape[:first], xt._data.shape[first + len(padded):]
    if len(padded) > 1:
        joined = (*lead, _product(shape[d] for d in inner), *tail)
        xt = reshape_view(xt, joined) if xt._data.flags.c_contiguous else reshape(xt, joined)
    out = apply(PadGather, xt, dim=first, plan=plan, mode=mode)
    if len(padded) > 1:
        out = reshape_view(out, (*lead, *(len(positions[padded.index(d)]) for d in inner),
                                 *tail))
    return out if inverse is None else permute(out, inverse)


_gather_pad_float32 = float32_under_autocast(_gather_pad)


def _index_device(dev: Device) -> Device:
    """Where a pad's positions are made: on the CPU for a meta tensor (which has no arrays to
    compute them with, and takes CPU integer indices, as PyTorch's)."""
    return CPU if dev.is_meta else dev


def _outer(positions: list, dev: object) -> list:
    """The index vectors shaped to broadcast against each other (one padded dim each)."""
    k = len(positions)
    return [_wrap(i.reshape([len(i) if j == m else 1 for m in range(k)]), dev)
            for j, i in enumerate(positions)]


def _positions(xp: object, n: int, before: int, after: int, mode: str) -> object:
    """Where each position of a dimension of size ``n`` padded by ``before`` and ``after``
    reads the input."""
    i = xp.arange(-before, n + after)
    if mode == "replicate":
        return xp.clip(i, 0, n - 1)
    if mode == "reflect":
        return (n - 1) - xp.abs((n - 1) - xp.abs(i))
    kept = _cropped(n, before, after)
    if kept:  # circular: wraps around what is left once negative amounts have cropped
        i = max(-before, 0) + (i + before - max(before, 0)) % kept
    return i


def flat_positions(xp: object, plan: tuple, mode: str) -> object:
    """The positions of adjacent padded dims ``plan`` ((size, before, after) each, outermost
    first) in the input with those dims flattened into one."""
    flat = None
    for n, before, after in plan:
        i = _positions(xp, n, before, after, mode)
        flat = i if flat is None else (flat[:, None] * n + i).reshape(-1)
    return flat


@primitive
class PadGather(Primitive):
    """Reflect, replicate or circular padding of adjacent dims ``plan`` ((size, before,
    after) each), flattened into dim ``dim`` of the input. Reflect and replicate pads (none
    negative, :func:`~ember.ops.pad_fold.folds`) run by slices: ``np.pad`` forward and
    ``pad_fold`` backward. The rest (circular, and negative pads: crops) is one gather;
    circular's backward folds slabs in PyTorch's order (``pad_fold``), the others' rebuilds
    the positions and adds through them (``index_put``), as do float16/bfloat16 reflect and
    replicate gradients: PyTorch's sum in the half dtype step by step, in output order.
    Saves nothing (a saved vector of positions was twice an input with one image plane)."""

    name = "pad_gather"
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves and sums elements: real coefficients
    save_inputs = False  # the vjp reads only the input's shape

    def forward(self, xp, x, *, dim, plan, mode):
        if folds(plan, mode):
            return pad_slices(xp, x, dim, plan, mode)
        return xp.take(x, flat_positions(xp, plan, mode), axis=dim)

    def infer(self, x, *, dim, plan, mode):
        shape = list(x.shape)
        shape[dim] = _product(n + before + after for n, before, after in plan)
        return TensorSpec(tuple(shape), x.dtype)

    def vjp(self, ctx, g):
        mode, half = ctx.params["mode"], g.dtype in HALF
        if mode == "circular" or (folds(ctx.params["plan"], mode) and not half):
            return apply(PadFold, g, **ctx.params)
        x, dim, dev = ctx.inputs[0], ctx.params["dim"], _index_device(g._device)
        flat = _wrap(flat_positions(dev.xp, ctx.params["plan"], ctx.params["mode"]), dev)
        base = zeros(x.shape, dtype=g.dtype, device=g.device)
        return apply(IndexPut, base, g, flat, basic=(), dims=(dim,), mode="add",
                     wide=False)  # (half sums step by step in output order, as PyTorch's)

    def jvp(self, ctx, dx):
        return apply(PadGather, dx, **ctx.params)


@primitive
class PadFold(Primitive):
    """``pad_gather``'s gradient where :func:`~ember.ops.pad_fold.folds`: the padded
    gradient's interior plus its border slabs, added where they were read (by slices, not
    ``index_put``'s scatter-add through a position per element). Its own gradient is
    ``pad_gather``."""

    name = "pad_fold"
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True
    save_inputs = False

    def forward(self, xp, g, *, dim, plan, mode):
        return fold_slices(xp, g, dim, plan, mode)

    def infer(self, g, *, dim, plan, mode):
        shape = list(g.shape)
        shape[dim] = _product(n for n, _, _ in plan)
        return TensorSpec(tuple(shape), g.dtype)

    def vjp(self, ctx, gg):
        return apply(PadGather, gg, **ctx.params)

    def jvp(self, ctx, dg):
        return apply(PadFold, dg, **ctx.params)
