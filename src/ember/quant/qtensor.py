"""Quantized tensors: integers (an ordinary ``int8``/``uint8``/``int32`` tensor) with the
affine map back to reals, one scale and zero point per tensor or per channel.

``quantize_per_tensor``/``quantize_per_channel`` make them as PyTorch's kernels round
(``nearbyint(x * (1 / scale) + zero_point)`` in float32, clamped to the dtype; see
:func:`ember.quant.kernels.quantize`), ``dequantize`` maps back,
``int_repr``, ``q_scale``, ``q_zero_point``, ``qscheme`` and the per-channel getters read them,
as in PyTorch. ``clone``, ``detach`` and shape methods (``reshape``, ``view``, ``flatten``,
``permute``, ``transpose``, ``t``, ``movedim``, ``flip``, ``repeat``, ``index_select``,
``squeeze``, ``unsqueeze``, ``select``, ``narrow``, ``split``, ``chunk``, ``unbind``,
``expand``, ``contiguous``, indexing; :mod:`ember.quant.qtensor_views`) act on the
integers and keep the quantization (per
channel only ``squeeze``, ``contiguous`` and those basic indexing gives, which take the
indexed channels' parameters); ``stride``, ``element_size``, ``is_contiguous``, ``cpu`` and
``to`` (the CPU, the same dtype) answer as PyTorch's. A
:class:`QuantizedTensor` is its own class, not an :class:`ember.Tensor`: ordinary tensors'
ops and dtype rules never look at it, so the eager path pays nothing for it. Given one, they
hand it over (``cat``, ``stack``: :mod:`ember.quant.join`) or raise
:class:`QuantizedOperandError` (whatever they read of it: its memory, its dtype, a
method or an operator only ordinary tensors have).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.backend.device import Device, device
from ember.dtypes import float32
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    IndexOutOfRange,
    ShapeError,
    refuse_non_tensor,
    type_name,
)
from ember.layouts import dense_strides, suggested_format
from ember.ops.creation import from_numpy, tensor
from ember.ops.int_args import as_float, as_int
from ember.quant import kernels
from ember.quant.qtensor_views import QuantizedViews
from ember.quant.qtypes import (
    QDType,
    QScheme,
    QuantizedOperandError,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_tensor_affine,
    qint8,
    qint32,
    quint4x2,
    quint8,
)
from ember.tensor import Tensor
from ember.tensor_repr import add_suffixes

__all__ = ["QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "dequantize"]


class QuantizedTensor(QuantizedViews):
    """Integers ``int_repr()`` standing for ``(int_repr() - zero_point) * scale``.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([-1.0, 0.0, 0.26]), 0.1, 10,
        ...                               ember.quint8)
        >>> q.int_repr(), q.q_scale(), q.q_zero_point()
        (tensor([ 0, 10, 13], dtype=ember.uint8), 0.1, 10)
        >>> q.dequantize()
        tensor([-1.0000,  0.0000,  0.3000])
    """

    __slots__ = ("_int", "dtype", "_scale", "_zero_point", "_axis")
    is_quantized = True

    def __init__(self, int_repr: Tensor, dtype: QDType, scale: Any, zero_point: Any,
                 axis: int | None = None) -> None:
        self._int, self.dtype, self._axis = int_repr, dtype, axis
        self._scale, self._zero_point = scale, zero_point

    # what PyTorch's quantized tensors answer
    def int_repr(self) -> Tensor:
        """A copy of the integers (as PyTorch's: writing it leaves this tensor be), laid out
        in their suggested format as PyTorch's: channels-last strides (size-1 dimensions'
        too) where they are so ordered, else C order."""
        return from_numpy(_laid_out(self._int._data, copy=True))

    def qscheme(self) -> QScheme:
        if self._axis is None:
            return per_tensor_affine
        float_zero_points = np.asarray(self._zero_point).dtype.kind == "f"
        return per_channel_affine_float_qparams if float_zero_points else per_channel_affine

    def q_scale(self) -> float:
        self._need(False, "q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        self._need(False, "q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self) -> Tensor:
        """float64, but float32 with float zero points (as PyTorch stores them)."""
        self._need(True, "q_per_channel_scales")
        float_qparams = self.qscheme() is per_channel_affine_float_qparams
        return tensor(self._scale, dtype="float32" if float_qparams else "float64")

    def q_per_channel_zero_points(self) -> Tensor:
        self._need(True, "q_per_channel_zero_points")
        zero_points = np.asarray(self._zero_point)
        return tensor(zero_points, dtype="float32" if zero_points.dtype.kind == "f" else "int64")

    def q_per_channel_axis(self) -> int:
        self._need(True, "q_per_channel_axis")
        return self._axis

    def _need(self, per_channel: bool, what: str) -> None:
        if (self._axis is not None) != per_channel:
            kind = "per-channel" if per_channel else "per-tensor"
            raise ArgumentError(f"{what}: expected a {kind} quantized tensor, got qscheme "
                                f"{self.qscheme()!r}")

    @property
    def _data(self) -> Any:  # an op reading a tensor's memory: the quantized tensor's error
        raise QuantizedOperandError("_data")

    def __getattr__(self, name: str) -> Any:
        """What only ordinary tensors have (``grad``, ``unsqueeze``, …): a float op
        or module was given a quantized tensor."""
        if name.startswith("__"):  # (protocols: copy, pickle, … look for these)
            raise AttributeError(name)
        raise QuantizedOperandError(name)

    def dequantize(self) -> Tensor:
        """The float32 values, laid out as PyTorch's: channels-last where the integers are,
        else in C order (a permuted tensor's too)."""
        return from_numpy(_laid_out(kernels.dequantize(self._int.numpy(), self._scale,
                                                       self._zero_point, self._axis)))

    # shape
    @property
    def shape(self) -> tuple[int, ...]:
        return self._int.shape

    def size(self, dim: int | None = None) -> Any:
        return self._int.size(dim) if dim is not None else self._int.size()

    def dim(self) -> int:
        return self._int.ndim

    @property
    def ndim(self) -> int:
        return self._int.ndim

    def numel(self) -> int:
        return self._int.numel()

    @property
    def device(self) -> Any:
        return self._int.device

    @property
    def requires_grad(self) -> bool:
        """False: a quantized tensor takes no gradient (as PyTorch's)."""
        return False

    def item(self) -> float:
        """The one element's real value (``dequantize().item()``), as PyTorch's."""
        return self.dequantize().item()

    def __setitem__(self, index: Any, value: Any) -> None:
        """Writes ``value`` (a number or a float tensor) at ``index``, quantized with this
        tensor's own parameters (as PyTorch's); a quantized value's integers where it is
        quantized as this tensor (per tensor, the same dtype, scale and zero point).

        Example:
            >>> q = ember.quantize_per_tensor(ember.zeros(3), 0.1, 3, ember.quint8)
            >>> q[0] = 1.26
            >>> q.int_repr()
            tensor([16,  3,  3], dtype=ember.uint8)
        """
        if isinstance(value, QuantizedTensor):
            self._write_integers(index, value)
            return
        one = self._axis is None and (type(value) in (int, float, bool) or
                                      isinstance(value, Tensor) and value.ndim == 0)
        floats = from_numpy(np.zeros(() if one else self._int[index].shape, np.float32))
        floats[...] = value  # (a number or 0-d value per tensor: quantized once, broadcast)
        self._int[index] = from_numpy(self._quantized_at(index, floats.detach().numpy()))

    def _quantized_at(self, index: Any, x: np.ndarray) -> np.ndarray:
        """``x`` (float32, the shape of ``self[index]`` or 0-d per tensor) quantized with the
        parameters of the positions ``index`` names: only those, not the whole tensor."""
        dtype = self.dtype
        if self._axis is None:
            return kernels.quantize(x, self._scale, self._zero_point, dtype.min, dtype.max,
                                    dtype.storage.np, sub_byte=dtype is quint4x2)
        along = [-1 if d == self._axis else 1 for d in range(self.ndim)]
        channels = np.broadcast_to(np.arange(self.shape[self._axis]).reshape(along),
                                   self.shape)
        written = from_numpy(channels)[index].numpy().ravel()  # (each position's channel)
        q = kernels.quantize(x.ravel(), np.asarray(self._scale)[written],
                             np.asarray(self._zero_point)[written], dtype.min, dtype.max,
                             dtype.storage.np, axis=0)  # (per channel: one per position)
        return q.reshape(x.shape)

    def _write_integers(self, index: Any, value: QuantizedTensor) -> None:
        """A quantized value's integers, where its dtype and per-tensor scale and zero point
        are this tensor's (PyTorch copies them whatever its parameters; other ones would
        silently stand for other reals, so they are refused)."""
        if value.dtype is not self.dtype or self._axis is not None or \
                value._axis is not None or \
                (value._scale, value._zero_point) != (self._scale, self._zero_point):
            raise ArgumentTypeError(
                f"quantized tensor assignment: the value ({value.dtype!r}, "
                f"{value.qscheme()!r}) is not quantized as this tensor ({self.dtype!r}, "
                f"{self.qscheme()!r}) with the same scale and zero point, so its integers "
                "stand for other reals. Hint: assign value.dequantize(), which is quantized "
                "again with this tensor's parameters")
        self._int[index] = value._int

    def _with_integers(self, ints: np.ndarray, inplace: bool = False) -> QuantizedTensor:
        """``ints`` at this tensor's scale and zero point (per tensor): written into it with
        ``inplace`` (as PyTorch's in-place activations; itself returned), else a new tensor."""
        if inplace:
            self._int[...] = from_numpy(ints)
            return self
        return QuantizedTensor(from_numpy(ints), self.dtype, self._scale, self._zero_point)

    def fill_(self, value: Any) -> QuantizedTensor:
        """Every element set to ``value`` (a number or a one-element tensor, as a float
        tensor's ``fill_`` takes; a quantized one's real value) quantized with this tensor's
        parameters (as PyTorch's)."""
        if isinstance(value, QuantizedTensor):
            value = value.dequantize()
        value = value.detach() if isinstance(value, Tensor) else value
        self[...] = from_numpy(np.zeros((), np.float32)).fill_(value)  # (its checks, its cast)
        return self

    # values (on the integers: the affine map keeps their order)
    def relu(self) -> QuantizedTensor:
        """The integers below the zero point raised to it (the real values' ``relu``)."""
        zero_points = np.asarray(self._zero_point)
        if self._axis is not None:
            zero_points = zero_points.reshape([-1 if d == self._axis else 1
                                               for d in range(self.ndim)])
        ints = self._int._data
        return self._like(from_numpy(np.maximum(ints, zero_points).astype(ints.dtype)),
                          self._axis)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The largest element (0-d), or ``(values, indices)`` along ``dim`` (per tensor, as
        PyTorch)."""
        return self._extreme("max", dim, keepdim)

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The smallest element (0-d), or ``(values, indices)`` along ``dim``."""
        return self._extreme("min", dim, keepdim)

    def _extreme(self, op: str, dim: int | None, keepdim: bool) -> Any:
        if dim is None:
            return self._same_qparams(getattr(self._int, op)(), op)
        found = getattr(self._int, op)(dim, keepdim)
        return type(found)((self._same_qparams(found.values, op), found.indices))

    def equal(self, other: Any) -> bool:
        """Whether ``other`` is a quantized tensor of the same dtype, scheme, parameters and
        integers (PyTorch's; a float tensor is never equal)."""
        if not isinstance(other, QuantizedTensor) or other.dtype is not self.dtype or \
                other._axis != self._axis or other.shape != self.shape:
            return False
        return (np.array_equal(np.asarray(self._scale), np.asarray(other._scale)) and
                np.array_equal(np.asarray(self._zero_point), np.asarray(other._zero_point)) and
                np.array_equal(self._int.numpy(), other._int.numpy()))

    # memory, as PyTorch's (the integers' own)
    def stride(self, dim: int | None = None) -> Any:
        return self._int.stride() if dim is None else self._int.stride(dim)

    def element_size(self) -> int:
        return self._int.element_size()

    def is_contiguous(self, **kwargs: Any) -> bool:
        return self._int.is_contiguous(**kwargs)

    def nelement(self) -> int:
        return self._int.numel()

    def cpu(self) -> QuantizedTensor:
        return self

    def to(self, *args: Any, copy: bool = False, non_blocking: bool = False,
           **kwargs: Any) -> QuantizedTensor:
        """This tensor (a copy with ``copy=True``): a quantized tensor only stays on the CPU
        with its dtype (PyTorch refuses to convert one; ``dequantize()`` gives floats)."""
        for arg in (*args, *kwargs.values()):
            if arg is not self.dtype and not (isinstance(arg, (str, Device)) and
                                              device(arg) == self.device):
                raise ArgumentError(f"to: a {self.dtype!r} quantized tensor cannot become "
                                    f"{arg!r} (as PyTorch). Hint: dequantize() first for a "
                                    "float tensor")
        return self.clone() if copy else self

    def __repr__(self) -> str:
        """PyTorch's: the dequantized values, then the size, dtype, scheme and parameters,
        each on a new line where it would pass the line width."""
        values = repr(self.dequantize())[:-1]
        if self._axis is None:
            qparams = [f"scale={self._scale}", f"zero_point={self._zero_point}"]
        else:
            qparams = [f"scale={self.q_per_channel_scales()!r}",
                       f"zero_point={self.q_per_channel_zero_points()!r}", f"axis={self._axis}"]
        size = [] if "size=" in values else [f"size={tuple(self.shape)}"]  # (empty: has it)
        return add_suffixes(values, [*size, f"dtype={self.dtype!r}",
                                     f"quantization_scheme={self.qscheme()!r}", *qparams],
                            len("tensor("))


def _refuse(what: str) -> Any:
    def refused(self: QuantizedTensor, *args: Any, **kwargs: Any) -> Any:
        raise QuantizedOperandError(what)
    return refused


# arithmetic and conversions are float ops; comparisons compare the real values, as PyTorch's
for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                       ("floordiv", "//"), ("mod", "%"), ("pow", "**"), ("matmul", "@"),
                       ("and", "&"), ("or", "|"), ("xor", "^"), ("lshift", "<<"),
                       ("rshift", ">>")):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(QuantizedTensor, _form.format(_name), _refuse(f"operator {_symbol}"))
for _name, _what in (("neg", "operator -"), ("pos", "operator +"), ("invert", "operator ~"),
                     ("abs", "abs()"), ("float", "float()"), ("int", "int()"),
                     ("array", "conversion to a NumPy array")):
    setattr(QuantizedTensor, f"__{_name}__", _refuse(_what))


def _compare(name: str) -> Any:
    def compare(self: QuantizedTensor, other: Any) -> Any:
        real = other.dequantize() if isinstance(other, QuantizedTensor) else other
        return getattr(self.dequantize(), name)(real)
    compare.__doc__ = f"``dequantize() {name}`` the other's real values (as PyTorch's)."
    return compare


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(QuantizedTensor, _name, _compare(_name))
QuantizedTensor.__hash__ = object.__hash__  # (by identity, as a tensor's)


def _laid_out(a: np.ndarray, copy: bool = False) -> np.ndarray:
    """``a`` in its suggested format, as PyTorch lays out quantized tensors: channels-last
    strides (size-1 dimensions' too) where they are so ordered, else C order; ``a`` itself
    when it already is (and no ``copy`` is asked for)."""
    fmt = suggested_format(a)
    if fmt.dims is None:
        return a.copy(order="C") if copy or not a.flags.c_contiguous else a
    strides = dense_strides(a.shape, fmt.dims, a.itemsize)
    if not copy and a.strides == tuple(strides):
        return a
    out = np.lib.stride_tricks.as_strided(np.empty(a.size, a.dtype), a.shape, strides)
    out[...] = a
    return out


def _check_input(op: str, input: Any, dtype: Any, zero_points: Any,
                 per_tensor: bool = False) -> None:
    if not isinstance(input, Tensor) or input.dtype is not float32:
        shown = input.dtype.name if isinstance(input, Tensor) else type_name(input)
        raise DTypeError(f"{op}: expected a float32 tensor (as PyTorch), got {shown}. Hint: "
                         "call .float() first")
    float_qparams = np.asarray(zero_points).dtype.kind == "f"
    allowed = ((qint8, quint8, quint4x2) if float_qparams else
               (qint8, quint8, qint32, quint4x2) if per_tensor else (qint8, quint8, qint32))
    if dtype not in allowed:
        names = ", ".join(repr(d) for d in allowed)
        raise DTypeError(f"{op}: dtype must be one of {names}"
                         f"{' with float zero points' if float_qparams else ''}, got {dtype!r}")
    if float_qparams:  # (per_channel_affine_float_qparams: any float zero point, as PyTorch)
        return
    for zero_point in np.ravel(zero_points):
        if not dtype.min <= zero_point <= dtype.max:
            raise ArgumentError(f"{op}: zero_point {zero_point} is outside {dtype!r}'s range "
                                f"[{dtype.min}, {dtype.max}]")


def quantize_per_tensor(input: Tensor | Sequence[Tensor], scale: float | Tensor,
                        zero_point: int | Tensor,
                        dtype: QDType) -> QuantizedTensor | tuple[QuantizedTensor, ...]:
    """``input`` rounded to ``dtype``'s integers with one ``scale`` and ``zero_point``. A
    list of tensors, with ``scale`` and ``zero_point`` tensors of one element per tensor,
    gives a tuple of quantized tensors (PyTorch's overload). ``quint4x2`` rounds before
    adding the zero point, as PyTorch's sub-byte kernel.

    Example:
        >>> ember.quantize_per_tensor(ember.tensor([0.5, 1.5, 99.0]), 1.0, 0,
        ...                           ember.qint8).int_repr()
        tensor([  0,   2,  99], dtype=ember.int8)
    """
    if isinstance(input, (list, tuple)):
        return _quantize_each(input, scale, zero_point, dtype)
    scale = as_float(scale.item() if isinstance(scale, Tensor) else scale,
                     "quantize_per_tensor", "scale")
    zero_point = (int(zero_point.item()) if isinstance(zero_point, Tensor)
                  else as_int(zero_point, "quantize_per_tensor", "zero_point"))
    _check_input("quantize_per_tensor", input, dtype, zero_point, per_tensor=True)
    q = kernels.quantize(input.detach().numpy(), scale, zero_point, dtype.min, dtype.max,
                         dtype.storage.np, sub_byte=dtype is quint4x2)
    return QuantizedTensor(from_numpy(_laid_out(q)), dtype, scale, zero_point)


def _quantize_each(tensors: Sequence[Tensor], scales: Any, zero_points: Any,
                   dtype: QDType) -> tuple[QuantizedTensor, ...]:
    if not (isinstance(scales, Tensor) and isinstance(zero_points, Tensor)):
        raise ArgumentTypeError("quantize_per_tensor: a list of tensors takes its scales and "
                                f"zero points as tensors, got {type(scales).__name__} and "
                                f"{type(zero_points).__name__}")
    if not scales.numel() == zero_points.numel() == len(tensors):
        raise ShapeError(f"quantize_per_tensor: {len(tensors)} tensors need {len(tensors)} "
                         f"scales and zero points, got {scales.numel()} and "
                         f"{zero_points.numel()}")
    return tuple(quantize_per_tensor(t, s, z, dtype) for t, s, z in
                 zip(tensors, scales.reshape(-1), zero_points.reshape(-1), strict=True))


def check_channels(op: str, input: Tensor, scales: Tensor, zero_points: Tensor,
                   axis: int) -> None:
    """``axis`` names a dimension of ``input``, and ``scales`` and ``zero_points`` have one
    element per index along it."""
    if not 0 <= axis < input.ndim:
        raise IndexOutOfRange(f"{op}: axis {axis} is out of range for a {input.ndim}-D input")
    channels = input.shape[axis]
    if tuple(scales.shape) != (channels,) or tuple(zero_points.shape) != (channels,):
        raise ShapeError(f"{op}: scales {tuple(scales.shape)} and zero_points "
                         f"{tuple(zero_points.shape)} must have shape ({channels},), the size "
                         f"of input {tuple(input.shape)} along axis {axis}")


def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int,
                         dtype: QDType) -> QuantizedTensor:
    """``input`` rounded to ``dtype``'s integers with ``scales[c]`` and ``zero_points[c]``
    for each index ``c`` along ``axis``. Float ``zero_points`` give PyTorch's
    ``per_channel_affine_float_qparams`` (float32 scales and zero points, any zero point;
    ``qint8``, ``quint8`` or ``quint4x2``), integer ones ``per_channel_affine``.

    Example:
        >>> q = ember.quantize_per_channel(ember.tensor([[1.0, 1.0], [3.0, 3.0]]),
        ...     ember.tensor([1.0, 0.5], dtype=ember.float64), ember.tensor([0, 0]), 1,
        ...     ember.qint8)
        >>> q.int_repr()
        tensor([[1, 2],
                [3, 6]], dtype=ember.int8)
    """
    _check_input("quantize_per_channel", input, dtype, zero_points.detach().numpy())
    check_channels("quantize_per_channel", input, scales, zero_points, axis)
    if not scales.is_floating_point():
        raise DTypeError(f"quantize_per_channel: scales must be a floating tensor (as PyTorch), "
                         f"got {scales.dtype.name}")
    z = zero_points.detach().numpy()
    float_qparams = z.dtype.kind == "f"
    s = scales.detach().numpy().astype(np.float32 if float_qparams else np.float64)
    z = z.astype(np.float32 if float_qparams else np.int64)
    q = kernels.quantize(input.detach().numpy(), s, z, dtype.min, dtype.max, dtype.storage.np,
                         axis)
    return QuantizedTensor(from_numpy(_laid_out(q)), dtype, s, z, axis)


def dequantize(input: QuantizedTensor | Sequence[QuantizedTensor]
               ) -> Tensor | tuple[Tensor, ...]:
    """The float32 tensor a quantized tensor stands for (``input.dequantize()``); a tuple of
    them for a list of quantized tensors. An ordinary tensor is converted to float32 (the
    same tensor if it is float32), as PyTorch's."""
    if isinstance(input, (list, tuple)):
        return tuple(dequantize(q) for q in input)
    refuse_non_tensor("dequantize", "input", input)  # (a PyTorch tensor's own would answer)
    return input.dequantize()
