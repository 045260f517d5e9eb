"""The shape methods of quantized tensors (:class:`ember.quant.QuantizedTensor` takes them
from :class:`QuantizedViews`): views and copies of the integers that keep the quantization,
per tensor always, per channel only where PyTorch keeps it (``squeeze``, ``contiguous``,
``clone`` and what basic indexing gives, which takes the indexed channels' parameters)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.errors import ArgumentError, IndexOutOfRange, ShapeError
from ember.layouts import contiguous_format, preserve_format
from ember.ops.dims import normalize_dim
from ember.ops.transposes import reversed_for_t
from ember.quant.qtypes import per_channel_affine_float_qparams
from ember.tensor import Tensor

if TYPE_CHECKING:
    from ember.quant.qtensor import QuantizedTensor


class QuantizedViews:
    """Shape methods acting on a quantized tensor's integers (``_int``), keeping its scale
    and zero point (``_scale``, ``_zero_point``, channels along ``_axis``).

    Example:
        >>> q = ember.quantize_per_tensor(ember.arange(6.0), 0.5, 0, ember.quint8)
        >>> q.reshape(2, 3)[1].int_repr()
        tensor([ 6,  8, 10], dtype=ember.uint8)
    """

    _int: Tensor
    _scale: Any
    _zero_point: Any
    _axis: int | None

    def _same_qparams(self, int_repr: Tensor, op: str) -> QuantizedTensor:
        if self._axis is not None:
            raise ArgumentError(f"{op}: not supported for a per-channel quantized tensor (as "
                                "PyTorch). Hint: dequantize() first")
        return type(self)(int_repr, self.dtype, self._scale, self._zero_point)

    def reshape(self, *shape: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.reshape(*shape), "reshape")

    def view(self, *shape: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.view(*shape), "view")

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> QuantizedTensor:
        return self._same_qparams(self._int.flatten(start_dim, end_dim), "flatten")

    def permute(self, *dims: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.permute(*dims), "permute")

    def transpose(self, dim0: int, dim1: int) -> QuantizedTensor:
        return self._same_qparams(self._int.transpose(dim0, dim1), "transpose")

    def _like(self, int_repr: Tensor, axis: int | None) -> QuantizedTensor:
        """The same quantization of other integers, the channels along ``axis``."""
        return type(self)(int_repr, self.dtype, self._scale, self._zero_point, axis)

    def clone(self, *, memory_format: Any = None) -> QuantizedTensor:
        """A copy of the integers, as PyTorch's quantized ``clone``: by default in C order
        (unlike an ordinary tensor's ``clone``); with ``preserve_format`` in the suggested
        format (channels-last where so ordered, else C order: not other strides, which an
        ordinary tensor's ``clone`` keeps); another ``memory_format`` as an ordinary
        tensor's ``clone``."""
        if memory_format is preserve_format:
            return self._like(self.int_repr(), self._axis)
        fmt = contiguous_format if memory_format is None else memory_format
        return self._like(self._int.clone(memory_format=fmt), self._axis)

    def detach(self) -> QuantizedTensor:
        return self._like(self._int, self._axis)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> QuantizedTensor:
        ints = self._int.squeeze() if dim is None else self._int.squeeze(dim)
        if self._axis is None:
            return self._like(ints, None)
        dims = range(self.ndim) if dim is None else np.atleast_1d(dim) % max(self.ndim, 1)
        gone = {int(d) for d in dims if self.shape[d] == 1}
        if self._axis in gone:
            raise ArgumentError(f"squeeze: the channel axis {self._axis} of a per-channel "
                                "quantized tensor cannot be squeezed (as PyTorch). Hint: "
                                "dequantize() first")
        return self._like(ints, self._axis - sum(d < self._axis for d in gone))

    def expand(self, *sizes: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.expand(*sizes), "expand")

    def expand_as(self, other: Any) -> QuantizedTensor:
        """``expand(other.shape)`` (per tensor only, as PyTorch)."""
        return self.expand(other.shape)

    def contiguous(self, memory_format: Any = contiguous_format) -> QuantizedTensor:
        """The integers laid out in ``memory_format`` (C order, or ``channels_last``), as
        ``Tensor.contiguous``; the quantization parameters kept."""
        return self._like(self._int.contiguous(memory_format=memory_format), self._axis)

    def __getitem__(self, index: Any) -> QuantizedTensor:
        """Per channel, as PyTorch: the channels' parameters follow a basic index (integers,
        slices, ``None``, ``...``); one channel left where the index cuts is per tensor."""
        ints = self._int[index]
        if self._axis is None:
            return type(self)(ints, self.dtype, self._scale, self._zero_point)
        if self.qscheme() is per_channel_affine_float_qparams:
            raise ArgumentError("indexing: not supported for a per_channel_affine_float_qparams "
                                "quantized tensor (as PyTorch). Hint: dequantize() first")
        axis, key, cuts_before, cuts = _channel_index(index, self.shape, self._axis)
        if cuts_before and len(self._scale) == 1:  # (already per tensor at the channel axis)
            key = slice(None)
        scales, zero_points = np.atleast_1d(self._scale[key]), np.atleast_1d(self._zero_point[key])
        if cuts and scales.size < 2:  # (PyTorch: one channel left of a cut is per tensor)
            if not scales.size:
                raise ArgumentError("indexing: no channel of the per-channel quantized tensor is "
                                    "left (as PyTorch refuses). Hint: dequantize() first")
            return type(self)(ints, self.dtype, float(scales[0]), int(zero_points[0]))
        return type(self)(ints, self.dtype, scales, zero_points, axis)

    def __len__(self) -> int:
        return len(self._int)

    # more views (as PyTorch's: per channel only those an index gives, by the same rules)
    def _along(self, dim: int, item: Any) -> QuantizedTensor:
        """``self[:, ..., item]`` with ``item`` at dimension ``dim`` (taken as normalized)."""
        return self[(slice(None),) * dim + (item,)]

    def unsqueeze(self, dim: int) -> QuantizedTensor:
        return self._along(normalize_dim(dim, self.ndim + 1, "unsqueeze"), None)

    def select(self, dim: int, index: int) -> QuantizedTensor:
        return self._along(normalize_dim(dim, self.ndim, "select"), index)

    def narrow(self, dim: int, start: int, length: int) -> QuantizedTensor:
        d = normalize_dim(dim, self.ndim, "narrow")
        start = start + self.shape[d] if start < 0 else start
        if not (0 <= start and length >= 0 and start + length <= self.shape[d]):
            raise IndexOutOfRange(f"narrow: start {start} and length {length} pass the size "
                                  f"{self.shape[d]} of dimension {d}")
        return self._along(d, slice(start, start + length))

    def unbind(self, dim: int = 0) -> tuple[QuantizedTensor, ...]:
        d = normalize_dim(dim, self.ndim, "unbind")
        return tuple(self._along(d, i) for i in range(self.shape[d]))

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0
              ) -> tuple[QuantizedTensor, ...]:
        d = normalize_dim(dim, self.ndim, "split")
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size < 0 or size == 0 and n:
                raise ArgumentError(f"split: split_size must be positive, got {size}")
            sizes = [min(size, n - at) for at in range(0, n, size)] if n else [0]
        elif sum(sizes := list(split_size_or_sections)) != n or min(sizes, default=0) < 0:
            raise ShapeError(f"split: sections {sizes} must be non-negative and sum to the "
                             f"size {n} of dimension {d}")
        starts = np.cumsum([0, *sizes[:-1]])
        return tuple(self.narrow(d, int(at), size) for at, size in zip(starts, sizes,
                                                                          strict=True))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[QuantizedTensor, ...]:
        n = self.shape[normalize_dim(dim, self.ndim, "chunk")]
        if chunks <= 0:
            raise ArgumentError(f"chunk: chunks must be positive, got {chunks}")
        if not n:  # (as PyTorch: that many empty chunks)
            return tuple(self.narrow(dim, 0, 0) for _ in range(chunks))
        return self.split(-(-n // chunks), dim)

    def view_as(self, other: Any) -> QuantizedTensor:
        same = tuple(other.shape) == tuple(self.shape)
        return self._like(self._int, self._axis) if same else self.view(other.shape)

    def reshape_as(self, other: Any) -> QuantizedTensor:
        same = tuple(other.shape) == tuple(self.shape)
        return self._like(self._int, self._axis) if same else self.reshape(other.shape)

    def t(self) -> QuantizedTensor:
        return self._same_qparams(self._int.t(), "t")

    @property
    def T(self) -> QuantizedTensor:  # noqa: N802 - PyTorch's name
        return self._same_qparams(reversed_for_t(self._int, stacklevel=3), "T")

    @property
    def mT(self) -> QuantizedTensor:  # noqa: N802 - PyTorch's name
        return self._same_qparams(self._int.mT, "mT")

    def movedim(self, source: Any, destination: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.movedim(source, destination), "movedim")

    def swapaxes(self, axis0: int, axis1: int) -> QuantizedTensor:
        return self._same_qparams(self._int.swapaxes(axis0, axis1), "swapaxes")

    swapdims = swapaxes

    def flip(self, *dims: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.flip(*dims), "flip")

    def repeat(self, *sizes: Any) -> QuantizedTensor:
        return self._same_qparams(self._int.repeat(*sizes), "repeat")

    def index_select(self, dim: int, index: Tensor) -> QuantizedTensor:
        return self._same_qparams(self._int.index_select(dim, index), "index_select")



def _integer_scalar(item: Any) -> bool:
    """A 0-d integer tensor, which indexes as its integer does (as PyTorch)."""
    return isinstance(item, Tensor) and item.ndim == 0 and item.dtype.np.kind in "iu"


def _channel_index(index: Any, shape: tuple[int, ...], axis: int
                   ) -> tuple[int, int | slice, bool, bool]:
    """Where the channel axis lands under a basic ``index``, what it takes of it, and
    whether the index cuts anything before the channel axis and at all (an integer, or a
    slice PyTorch does not skip: a slice alone, or one other than ``:``, ``0:`` or ``0:n``
    with ``n`` past the size)."""
    items = tuple(int(i) if _integer_scalar(i) else i
                  for i in (index if isinstance(index, tuple) else (index,)))
    if not all(i is None or i is Ellipsis or isinstance(i, slice) or
               (isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))
               for i in items):
        raise ArgumentError("indexing: a per-channel quantized tensor takes integers, slices, "
                            "None and ... (as PyTorch). Hint: dequantize() first")
    if Ellipsis in items:
        at, fill = items.index(Ellipsis), len(shape) - sum(i is not None for i in items) + 1
        items = items[:at] + (slice(None),) * fill + items[at + 1:]

    def whole(item: slice, size: int) -> bool:  # (as PyTorch's indexing skips a slice op)
        return (not isinstance(index, slice) and item.start in (None, 0) and
                (item.stop is None or item.stop >= size) and item.step in (None, 1))

    dim = out = 0
    found, cuts = None, False
    for item in items:
        if item is not None:
            if dim == axis:
                found = out, item, cuts
            cuts |= not (isinstance(item, slice) and whole(item, shape[dim]))
            dim += 1
        out += not isinstance(item, (int, np.integer))
    return (*(found or (out + axis - dim, slice(None), cuts)), cuts)

