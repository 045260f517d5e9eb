"""Statically quantized modules (``torch.ao.nn.quantized`` and its fused ``intrinsic``
variants): what ``convert`` puts in place of observed float modules. Weights are int8 with
per-tensor or per-channel scales; activations are uint8 :class:`QuantizedTensor`s; the
arithmetic is fbgemm's (:mod:`ember.quant.kernels`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ember import nn
from ember.backends import quantized as quantized_backend
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.jit import TraceError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.ops.im2col import ntuple
from ember.quant import kernels
from ember.quant.qtensor import QuantizedTensor, quantize_per_channel, quantize_per_tensor
from ember.quant.qtypes import QDType, qint8, qint32, quint8
from ember.tensor import Tensor

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv1d", "Conv2d", "Conv3d", "LinearReLU",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "ReLU", "MaxPool2d", "Dropout"]


def _unexpected(state_dict: Any, prefix: str, known: list[str], strict: bool,
                unexpected_keys: list) -> None:
    """With ``strict``, lists the keys under ``prefix`` this module does not hold."""
    if strict:
        unexpected_keys.extend(k for k in state_dict if k.startswith(prefix)
                               and k[len(prefix):] not in known and k not in unexpected_keys)


def linear_rows(op: str, shape: tuple, in_features: int) -> tuple:
    """The leading shape of a linear layer's input (its rows), after checking that the input
    is at least 2-D with ``in_features`` last (as PyTorch's quantized linear kernels)."""
    if len(shape) < 2 or shape[-1] != in_features:
        raise ArgumentError(f"{op}: expected an input at least 2-D with {in_features} input "
                            f"features last, got shape {tuple(shape)}")
    return tuple(shape[:-1])


@contextmanager
def eager_only(module: str) -> Iterator[None]:
    """Turns the trace error of reading a float input's values (the quantized kernels run in
    NumPy) into one that says a converted model runs eagerly."""
    try:
        yield
    except TraceError as e:
        raise TraceError(f"{module}: quantized modules compute on integers in NumPy, outside "
                         f"ember.jit ({e}). Hint: run the converted model eagerly (not in a "
                         "compiled function); a QAT model compiles") from e


def output_qparams(observer: Any) -> tuple[float, int]:
    """An observer's (or fake quantizer's) output scale and zero point, as Python numbers."""
    scale, zero_point = observer.calculate_qparams()
    return float(scale.item()), int(zero_point.item())


def _quantized_input(op: str, x: Any, allowed: tuple = (quint8,)) -> QuantizedTensor:
    """``x`` if it is a per-tensor quantized tensor of a dtype in ``allowed``, else the
    error naming ``op``."""
    if not isinstance(x, QuantizedTensor) or x.dtype not in allowed or x._axis is not None:
        shown = (f"a quantized tensor of {x.dtype!r}" if isinstance(x, QuantizedTensor)
                 else f"a {type(x).__name__}")
        kinds = " or ".join(repr(d) for d in allowed)
        hint = ("put a QuantStub before it, so that convert quantizes the input"
                if not isinstance(x, QuantizedTensor) else
                f"give the input observer a {kinds} dtype" if x._axis is None else
                "quantize the input per tensor")
        raise DTypeError(f"quantized {op}: expected a per-tensor {kinds} quantized tensor, "
                         f"got {shown}. Hint: {hint}")
    return x


class QuantizedName:
    """Names a quantized module as PyTorch prints it: ``QuantizedLinear(...)``, and with
    ``_name_prefix = "DynamicQuantized"``, ``DynamicQuantizedLSTM(...)``."""

    _name_prefix = "Quantized"

    def _get_name(self) -> str:
        return self._name_prefix + type(self).__name__


class OutputQParams(Module):
    """A module whose state is its output's ``scale`` and ``zero_point`` (numbers), saved as
    0-d tensors and loaded from a state dict as PyTorch's quantized modules load them."""

    scale: float
    zero_point: int
    _float32_scale = False  # (True where PyTorch holds the scale in a float32 buffer)
    _saves_float32_scale = False  # (True where PyTorch saves a float64 scale as float32)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "scale" and self._float32_scale:  # (set, loaded or assigned alike)
            value = float(np.float32(float(value)))
        super().__setattr__(name, value)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        float32 = self._float32_scale or self._saves_float32_scale
        destination[prefix + "scale"] = tensor(self.scale,
                                               dtype="float32" if float32 else "float64")
        destination[prefix + "zero_point"] = tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        for name, kind in (("scale", float), ("zero_point", int)):
            if prefix + name in state_dict:
                setattr(self, name, kind(state_dict[prefix + name].item()))
            else:
                missing_keys.append(prefix + name)
        _unexpected(state_dict, prefix, ["scale", "zero_point"], strict, unexpected_keys)


class Quantize(OutputQParams):
    """Quantizes float input with a fixed ``scale`` and ``zero_point`` (what ``QuantStub``
    becomes); the scale rounded to float32, as PyTorch's buffer.

    Example:
        >>> Quantize(0.5, 2, ember.quint8)(ember.tensor([1.0])).int_repr()
        tensor([4], dtype=ember.uint8)
    """

    _float32_scale = True

    def __init__(self, scale: float, zero_point: int, dtype: QDType) -> None:
        super().__init__()
        self.scale, self.zero_point, self.dtype = scale, int(zero_point), dtype

    def forward(self, X: Tensor) -> QuantizedTensor:  # noqa: N803 - PyTorch's name
        with eager_only("quantized Quantize"):
            return quantize_per_tensor(X, self.scale, self.zero_point, self.dtype)

    @classmethod
    def from_float(cls, mod: Module) -> Quantize:
        return cls(*output_qparams(mod.activation_post_process),
                   mod.activation_post_process.dtype)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        destination[prefix + "scale"] = tensor([self.scale])
        destination[prefix + "zero_point"] = tensor([self.zero_point])

    def extra_repr(self) -> str:
        qparams = f"scale={tensor([self.scale])}, zero_point={tensor([self.zero_point])}"
        return f"{qparams}, dtype={self.dtype!r}"


class DeQuantize(Module):
    """Turns a quantized tensor back into float32 (what ``DeQuantStub`` becomes)."""

    def forward(self, Xq: QuantizedTensor | Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        return Xq.dequantize()  # (an ordinary tensor: in float32, itself if float32)

    @classmethod
    def from_float(cls, mod: Module) -> DeQuantize:
        return cls()


def quantized_weight(layer: Module, qconfig: Any) -> QuantizedTensor:
    """``layer.weight`` quantized to int8: by its QAT fake quantizer when it has one, else by
    a fresh ``qconfig.weight`` observer (see :func:`quantize_weight_tensor`)."""
    return quantize_weight_tensor(layer.weight, qconfig, type(layer).__name__,
                                  getattr(layer, "weight_fake_quant", None))


def quantize_weight_tensor(weight: Tensor, qconfig: Any, owner: str,
                           observer: Any = None) -> QuantizedTensor:
    """``weight`` quantized to int8 by the parameters of ``observer`` (a QAT fake quantizer)
    or of a fresh ``qconfig.weight`` observer, after showing it the weight once more (as
    PyTorch's ``from_float``: a fake quantizer whose observer is on moves its range)."""
    if observer is None:
        observer = qconfig.weight()
    observer(weight)
    if observer.dtype is not qint8:
        raise ArgumentError(f"{owner}: the weight observer must have dtype ember.qint8, got "
                            f"{observer.dtype!r}")
    scale, zero_point = observer.calculate_qparams()
    weight = weight.detach().float()
    if observer.qscheme.per_channel:
        return quantize_per_channel(weight, scale.double(), zero_point.long(), observer.ch_axis,
                                    qint8)
    return quantize_per_tensor(weight, scale.item(), zero_point.item(), qint8)


def save_quantized_weight(destination: dict, name: str, w: QuantizedTensor) -> None:
    """``w``'s int8 values under ``name`` and its scales, zero points and axis (-1 per tensor)
    under ``name`` plus ``_scale``, ``_zero_point`` and ``_axis``: plain tensors."""
    destination[name] = w._int
    destination[name + "_scale"] = tensor(np.atleast_1d(w._scale), dtype="float64")
    destination[name + "_zero_point"] = tensor(np.atleast_1d(w._zero_point), dtype="int64")
    destination[name + "_axis"] = tensor([-1 if w._axis is None else w._axis])


def load_quantized_weight(state_dict: Any, name: str, dtype: QDType = qint8
                          ) -> QuantizedTensor:
    """The ``dtype`` weight :func:`save_quantized_weight` wrote under ``name``."""
    axis = int(state_dict[name + "_axis"].item())
    scale, zero_point = state_dict[name + "_scale"], state_dict[name + "_zero_point"]
    if axis < 0:
        return QuantizedTensor(state_dict[name].clone(), dtype, float(scale.reshape(-1)[0]),
                               int(zero_point.reshape(-1)[0]))
    return QuantizedTensor(state_dict[name].clone(), dtype, scale.numpy().copy(),
                           zero_point.numpy().copy(), axis)


class _WeightedQuantized(QuantizedName, Module):
    """A quantized layer with int8 weights, a float32 bias and output ``scale`` and
    ``zero_point``. Its state dict holds ``weight`` (the int8 values), ``weight_scale`` and
    ``weight_zero_point`` (one, or one per output channel), ``bias``, ``scale`` and
    ``zero_point``: plain tensors that ``ember.save`` writes."""

    relu = False
    _float_types: tuple = ()
    _per_channel_weights = True  # (along axis 0, the output channels)
    _outputs: int  # the number of output channels (features)

    def _set_weight(self, w: QuantizedTensor, bias: Tensor | None) -> None:
        """Sets the weight and bias, packed (as PyTorch's) for the engine current now: the
        module keeps computing as that engine when ``ember.backends.quantized.engine``
        changes later."""
        self._engine = quantized_backend.engine
        self._w = w
        self._b = None if bias is None else bias.detach().float().numpy().copy()
        zp = w._zero_point
        self._w_centred = kernels.centred(w._int.numpy(), zp, w._axis)
        self._w_scales = np.atleast_1d(np.asarray(w._scale, np.float64))  # (as stored)

    def weight(self) -> QuantizedTensor:
        return self._w

    def bias(self) -> Tensor | None:
        return None if self._b is None else from_numpy(self._b.copy())

    def set_weight_bias(self, w: QuantizedTensor, b: Tensor | None) -> None:
        """Replaces the int8 weight (per tensor, or per output channel) and the float bias
        (None: none), as PyTorch's, which repacks them for the current engine."""
        name = f"quantized {type(self).__name__}.set_weight_bias"
        if not isinstance(w, QuantizedTensor) or w.dtype is not qint8:
            shown = repr(w.dtype) if isinstance(w, QuantizedTensor) else type(w).__name__
            raise DTypeError(f"{name}: expected an ember.qint8 quantized weight, got {shown}. "
                             "Hint: ember.quantize_per_tensor(w, scale, 0, ember.qint8)")
        if tuple(w.shape) != tuple(self._w.shape):
            raise ArgumentError(f"{name}: expected a weight of shape {tuple(self._w.shape)}, got "
                                f"{tuple(w.shape)}")
        if w._axis is not None and not self._per_channel_weights:
            raise ArgumentError(f"{name}: per-channel weights are not supported (as in PyTorch's "
                                "fbgemm): quantize it per tensor")
        if w._axis not in (None, 0):
            raise ArgumentError(f"{name}: a per-channel weight must be quantized along axis 0 "
                                f"(the output channels), got axis {w._axis}")
        channels = self._outputs
        if b is not None and (not isinstance(b, Tensor) or tuple(b.shape) != (channels,)):
            shown = tuple(b.shape) if isinstance(b, Tensor) else type(b).__name__
            raise ArgumentError(f"{name}: expected a float bias of shape ({channels},) or None, "
                                f"got {shown}")
        self._set_weight(w, b)

    def _output(self, acc: np.ndarray, x: QuantizedTensor, channel_axis: int) -> QuantizedTensor:
        """The uint8 output of the exact accumulator, requantized as the engine the weights
        were packed for does."""
        requantize = kernels.requantize_qnnpack if self._engine == "qnnpack" \
            else kernels.requantize
        q = requantize(acc, x._scale, self._w_scales, self._b, self.scale, self.zero_point,
                       self.relu, channel_axis)
        return QuantizedTensor(from_numpy(q), quint8, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: Module) -> _WeightedQuantized:
        """The quantized twin of an observed float module (after ``prepare`` and
        calibration): its weight quantized by ``mod.qconfig.weight``'s observer, its output
        scale and zero point from ``mod.activation_post_process``."""
        layer = mod[0] if isinstance(mod, nn.Sequential) else mod
        qmod = cls._like(layer)
        qmod.scale, qmod.zero_point = output_qparams(mod.activation_post_process)
        if hasattr(layer, "fused_weight_bias"):  # (a QAT ConvBn*: its batch norm folded in)
            weight, bias = layer.fused_weight_bias()
            qmod._set_weight(quantize_weight_tensor(weight, mod.qconfig, type(layer).__name__,
                                                    layer.weight_fake_quant), bias)
        else:
            qmod._set_weight(quantized_weight(layer, mod.qconfig), layer.bias)
        return qmod

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        save_quantized_weight(destination, prefix + "weight", self._w)
        if self._b is not None:
            destination[prefix + "bias"] = self.bias()
        # (0-d, the scale float32, as PyTorch's; a load reads either these or the (1,)
        # float64 scale and zero point that Ember saved before)
        destination[prefix + "scale"] = tensor(self.scale, dtype="float32")
        destination[prefix + "zero_point"] = tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        names = ["weight", "weight_scale", "weight_zero_point", "weight_axis", "scale",
                 "zero_point"]
        _unexpected(state_dict, prefix, names + ["bias"], strict, unexpected_keys)
        missing = [prefix + n for n in names if prefix + n not in state_dict]
        if missing:
            missing_keys.extend(missing)
            return
        w = load_quantized_weight(state_dict, prefix + "weight")
        if tuple(w.shape) != tuple(self._w.shape):
            error_msgs.append(f"size mismatch for {prefix}weight: copying a param with shape "
                              f"{tuple(w.shape)} from checkpoint, the shape in current model is "
                              f"{tuple(self._w.shape)}.")
            return
        self.scale = float(state_dict[prefix + "scale"].item())
        self.zero_point = int(state_dict[prefix + "zero_point"].item())
        self._set_weight(w, state_dict.get(prefix + "bias"))

    def extra_repr(self) -> str:
        return (f"{self._shape_repr()}, scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self._w.qscheme()!r}")


class Linear(_WeightedQuantized):
    """A quantized ``nn.Linear``: uint8 input and output, int8 weight, float32 bias.

    Example:
        >>> m = Linear(3, 2)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 3), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: QDType = qint8) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.scale, self.zero_point = 1.0, 0
        w = quantize_per_tensor(tensor(np.zeros((out_features, in_features), np.float32)), 1.0,
                                0, qint8)
        self._set_weight(w, tensor(np.zeros(out_features, np.float32)) if bias_ else None)

    @property
    def _outputs(self) -> int:
        return self.out_features

    @classmethod
    def _like(cls, layer: Module) -> Linear:
        return cls(layer.in_features, layer.out_features, layer.bias is not None)

    def _shape_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"

    def forward(self, x: QuantizedTensor) -> QuantizedTensor:
        x = _quantized_input("linear", x)
        lead = linear_rows("quantized Linear", x.shape, self.in_features)
        xc = kernels.centred(x._int.numpy(), x._zero_point)
        acc = kernels.linear_accumulate(xc.reshape(-1, self.in_features), self._w_centred)
        return self._output(acc.reshape(*lead, self.out_features), x, -1)


class LinearReLU(Linear):
    """A quantized ``Linear`` with the ReLU fused into its requantization."""

    relu = True


class _ConvLayer(_WeightedQuantized):
    """What the quantized convolutions and transposed convolutions share: their geometry
    (checked as PyTorch's weight prepacking checks it), their name and their input checks."""

    _n = 2
    _layout = "(N, C, H, W)"
    _kind, _op = "Conv", "conv"
    _padding_modes: tuple[str, ...] = ("zeros",)

    @property
    def _name(self) -> str:
        return f"{self._kind}{self._n}d"

    @property
    def _outputs(self) -> int:
        return self.out_channels

    def _set_geometry(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                      padding: Any, dilation: Any, groups: int, padding_mode: str) -> None:
        name = f"quantized {self._name}"
        if padding_mode not in self._padding_modes or isinstance(padding, str):
            raise ArgumentError(f"{name}: only numeric {' or '.join(self._padding_modes)} "
                                f"padding is supported, got padding={padding!r}, "
                                f"padding_mode={padding_mode!r}")
        if not isinstance(groups, int) or groups < 1:
            raise ArgumentError(f"{name}: groups must be a positive int, got {groups!r}")
        for what, channels in (("in_channels", in_channels), ("out_channels", out_channels)):
            if channels % groups:
                raise ArgumentError(f"{name}: {what} must be divisible by groups, "
                                    f"got {what}={channels}, groups={groups}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = self._sizes("kernel_size", kernel_size, 1)
        self.stride = self._sizes("stride", stride, 1)
        self.padding = self._sizes("padding", padding, 0)
        self.dilation = self._sizes("dilation", dilation, 1)
        self.padding_mode = padding_mode
        self.scale, self.zero_point = 1.0, 0

    def _sizes(self, what: str, value: Any, least: int) -> tuple[int, ...]:
        """``value`` (an int or ``_n`` ints) as ``_n`` ints, each at least ``least``."""
        try:
            sizes = ntuple(value, self._n, f"quantized {self._name}", what)
        except ShapeError as e:
            raise ArgumentError(str(e)) from None
        if min(sizes) < least:
            raise ArgumentError(f"quantized {self._name}: {what} must be "
                                f"{'positive' if least else 'non-negative'}, got {value!r}")
        return sizes

    def _checked_input(self, x: Any) -> QuantizedTensor:
        x = _quantized_input(f"{self._op}{self._n}d", x)
        if x.ndim != self._n + 2:
            raise ArgumentError(f"Input shape must be `{self._layout}`! quantized {self._name}: "
                                f"expected a {self._n + 2}-D {self._layout} input, got shape "
                                f"{tuple(x.shape)}")
        if x.shape[1] != self.in_channels:
            raise ArgumentError(f"quantized {self._name}: expected {self.in_channels} input "
                                f"channels, got an input of shape {tuple(x.shape)}")
        return x

    def extra_repr(self) -> str:
        """PyTorch's: sizes, kernel, stride, output qparams, then what is off its default."""
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        for name, unit in (("padding", 0), ("dilation", 1), ("output_padding", 0)):
            value = getattr(self, name, None)
            if value is not None and tuple(value) != (unit,) * len(value):
                s += f", {name}={value}"
        s += f", groups={self.groups}" if self.groups != 1 else ""
        return s + (", bias=False" if self._b is None else "")


class _Conv(_ConvLayer):
    """A quantized ``nn.Conv{n}d``: uint8 input and output, int8 weight, zero (or, but in 3-D,
    reflection) padding."""

    _padding_modes = ("zeros", "reflect")

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros") -> None:
        super().__init__()
        self._set_geometry(in_channels, out_channels, kernel_size, stride, padding, dilation,
                           groups, padding_mode)
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        w = quantize_per_tensor(tensor(np.zeros(shape, np.float32)), 1.0, 0, qint8)
        self._set_weight(w, tensor(np.zeros(out_channels, np.float32)) if bias else None)

    @classmethod
    def _like(cls, layer: Module) -> _Conv:
        return cls(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                   layer.padding, layer.dilation, layer.groups, layer.bias is not None,
                   layer.padding_mode)

    def forward(self, x: QuantizedTensor) -> QuantizedTensor:
        x = self._checked_input(x)
        q, padding = x._int.numpy(), self.padding
        if self.padding_mode == "reflect":  # (the padded integers: exact, as PyTorch's F.pad)
            q = np.pad(q, ((0, 0), (0, 0)) + tuple((p, p) for p in padding), mode="reflect")
            padding = (0,) * self._n
        self._check_input(q.shape, padding)
        acc = kernels.conv_accumulate(kernels.centred(q, x._zero_point), self._w_centred,
                                      self.stride, padding, self.dilation, self.groups)
        fbgemm = self._engine == "fbgemm" or (
            self._engine == "x86" and not kernels.x86_uses_onednn(self._w._zero_point,
                                                                  self.groups))
        if fbgemm and kernels.depthwise_fast_path(
                self.in_channels, self.out_channels, self.groups, self.kernel_size,
                self.stride, padding, self.dilation):
            acc = (acc + kernels.depthwise_saturation(q, x._zero_point, self._w._int.numpy(),
                                                      self.stride, padding)
                   + kernels.row_offset_saturation(q, x._zero_point, self._w._zero_point,
                                                   self.out_channels, self.kernel_size,
                                                   self.stride, padding))
        return self._output(acc, x, 1)

    def _check_input(self, shape: tuple, padding: tuple[int, ...]) -> None:
        for size, pad, k, d in zip(shape[2:], padding, self.kernel_size, self.dilation):
            if size + 2 * pad < (k - 1) * d + 1:
                raise ArgumentError(f"quantized {self._name}: the padded input {tuple(shape)} "
                                    f"(padding {self.padding}) is smaller than the kernel "
                                    f"{self.kernel_size} with dilation {self.dilation}")


class Conv1d(_Conv):
    """A quantized ``nn.Conv1d`` (zero or reflection padding): uint8 input and output, int8
    weight.

    Example:
        >>> m = Conv1d(1, 2, 3, padding=1)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 1, 4), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2, 4])
    """

    _n, _layout = 1, "(N, C, L)"


class Conv2d(_Conv):
    """A quantized ``nn.Conv2d`` (zero or reflection padding): uint8 input and output, int8
    weight.

    Example:
        >>> m = Conv2d(1, 2, 3, padding=1)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 1, 4, 4), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2, 4, 4])
    """

    _n, _layout = 2, "(N, C, H, W)"


class Conv3d(_Conv):
    """A quantized ``nn.Conv3d`` (zero padding only, as PyTorch's): uint8 input and output,
    int8 weight.

    Example:
        >>> m = Conv3d(1, 2, 3, padding=1)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 1, 2, 4, 4), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2, 2, 4, 4])
    """

    _n, _layout = 3, "(N, C, D, H, W)"
    _padding_modes = ("zeros",)


class ConvReLU1d(Conv1d):
    """A quantized ``Conv1d`` with the ReLU fused into its requantization."""

    relu = True


class ConvReLU2d(Conv2d):
    """A quantized ``Conv2d`` with the ReLU fused into its requantization."""

    relu = True


class ConvReLU3d(Conv3d):
    """A quantized ``Conv3d`` with the ReLU fused into its requantization."""

    relu = True


class ReLU(nn.ReLU):
    """ReLU of a quantized tensor: ``max(q, zero_point)``, same scale and zero point (what
    PyTorch's ``nn.ReLU`` computes on a quantized tensor, in place with ``inplace``; Ember
    swaps the module). A float tensor (after a ``DeQuantize``) gets the float ReLU."""

    def forward(self, x: QuantizedTensor) -> QuantizedTensor:
        if isinstance(x, Tensor):  # (after the quantized region: a float ReLU)
            return super().forward(x)
        x = _quantized_input("relu", x, (quint8, qint8, qint32))
        floor = np.asarray(x._zero_point, dtype=x._int.numpy().dtype)
        return x._with_integers(np.maximum(x._int.numpy(), floor), self.inplace)

    @classmethod
    def from_float(cls, mod: Module) -> ReLU:
        return cls(mod.inplace)


class MaxPool2d(nn.MaxPool2d):
    """Max pooling of a quantized tensor, on its integers (exact: the map to reals is
    increasing), same scale and zero point; float pooling of a float tensor."""

    def forward(self, x: QuantizedTensor) -> QuantizedTensor:
        if isinstance(x, Tensor):  # (after the quantized region: float pooling)
            return super().forward(x)
        x = _quantized_input("max_pool2d", x)
        pooled = super().forward(x._int.float())
        return QuantizedTensor(pooled.to(x._int.dtype), x.dtype, x._scale, x._zero_point)

    @classmethod
    def from_float(cls, mod: Module) -> MaxPool2d:
        return cls(mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                   ceil_mode=mod.ceil_mode)


class Dropout(QuantizedName, nn.Dropout):
    """Dropout of a quantized model: the identity (as PyTorch's, in training mode too);
    ``p`` and ``inplace`` are kept from the float module.

    Example:
        >>> Dropout(0.5)
        QuantizedDropout(p=0.5, inplace=False)
    """

    def forward(self, x: Any) -> Any:
        return x

    @classmethod
    def from_float(cls, mod: Module) -> Dropout:
        return cls(mod.p, mod.inplace)
