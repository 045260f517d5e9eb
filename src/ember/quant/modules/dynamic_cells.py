"""Dynamically quantized ``RNNCell``, ``LSTMCell`` and ``GRUCell``
(``torch.ao.nn.quantized.dynamic``): int8 (or float16) weights, float32 input and states. As
PyTorch's ``quantized_*_cell`` kernels: one step adds the dynamically quantized projections
``x W_ihᵀ + b_ih`` and ``h W_hhᵀ + b_hh`` (each quantizing its own float input) and applies
the gates in float32."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.dtypes import float16, float32
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.nn.module import Module
from ember.ops.creation import zeros
from ember.ops.rnn_cells import gru_step, lstm_step, relu_step, tanh_step
from ember.quant.modules.dynamic_rnn import _DynamicRNN
from ember.quant.modules.quantized import eager_only
from ember.quant.qconfig import default_dynamic_qconfig, float16_dynamic_qconfig
from ember.quant.qtypes import QDType, qint8
from ember.tensor import Tensor

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]


class _DynamicCell(Module):
    """The shared step of the dynamically quantized cells; the weights, their state dict
    (PyTorch's parameter names) and ``from_float`` as the dynamic layers'."""

    mode = ""
    nonlinearity = "tanh"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 dtype: QDType | Any = qint8) -> None:
        super().__init__()
        if dtype is not qint8 and dtype is not float16:
            raise ArgumentError(f"dynamic quantized {self.mode}: dtype must be ember.qint8 or "
                                f"ember.float16, got {dtype!r}")
        self.input_size, self.hidden_size, self.bias, self.dtype = (input_size, hidden_size,
                                                                    bias, dtype)
        self._quantize_weights(self._float_cell(), default_dynamic_qconfig if dtype is qint8
                               else float16_dynamic_qconfig)  # (PyTorch's initial weights)

    def _float_cell(self) -> Module:
        return getattr(nn, self.mode)(self.input_size, self.hidden_size, self.bias)

    @classmethod
    def from_float(cls, mod: Module) -> _DynamicCell:
        """The dynamically quantized twin of a float cell with a ``qconfig`` (float16 weights
        when its weight observer's dtype is ``float16``)."""
        if not mod.bias:
            raise ArgumentError(f"dynamic quantized {cls.mode}: from_float needs a float cell "
                                "with bias=True, as PyTorch's (got bias=False)")
        dtype = float16 if mod.qconfig.weight().dtype is float16 else qint8
        q = cls._made_like(mod, dtype)
        q._quantize_weights(mod, mod.qconfig)
        return q

    @classmethod
    def _made_like(cls, mod: Module, dtype: Any) -> _DynamicCell:
        return cls(mod.input_size, mod.hidden_size, mod.bias, dtype)

    def _suffixes(self) -> list[str]:
        return [""]

    _quantize_weights, _weights_type = _DynamicRNN._quantize_weights, _DynamicRNN._weights_type
    _save_to_state_dict = _DynamicRNN._save_to_state_dict
    _load_from_state_dict = _DynamicRNN._load_from_state_dict

    def _step(self, input: Tensor, hx: Tensor | None, cx: Tensor | None) -> tuple:
        name = f"dynamic quantized {self.mode}"
        if not isinstance(input, Tensor) or input.dtype is not float32:
            raise DTypeError(f"{name}: expected a float32 input (as PyTorch's), got "
                             f"{getattr(input, 'dtype', type(input).__name__)!r}")
        if input.ndim != 2 or input.shape[1] != self.input_size:
            raise ShapeError(f"{name}: expected an input of shape (N, {self.input_size}), got "
                             f"{tuple(input.shape)}. Hint: unsqueeze(0) adds the batch dimension")
        shape = (input.shape[0], self.hidden_size)
        for label, state in (("hx", hx), ("cx", cx)):
            if state is not None and (not isinstance(state, Tensor) or tuple(state.shape) != shape
                                      or state.dtype is not float32):
                raise ShapeError(f"{name}: expected a float32 {label} of shape {shape}, got "
                                 f"{getattr(state, 'dtype', type(state).__name__)!r} of shape "
                                 f"{tuple(getattr(state, 'shape', ()))}")
        empty = zeros(*shape)
        ih, hh = self._layers[0]
        step = {"LSTMCell": lstm_step, "GRUCell": gru_step}.get(
            self.mode, relu_step if self.nonlinearity == "relu" else tanh_step)
        with eager_only(name):
            return step(ih(input), empty if hx is None else hx, empty if cx is None else cx,
                        hh, None)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, dtype={self.dtype!r}"


class RNNCell(_DynamicCell):
    """A dynamically quantized ``nn.RNNCell`` (``nonlinearity`` "tanh" or "relu").

    Example:
        >>> from ember.ao.quantization import quantize_dynamic
        >>> q = quantize_dynamic(nn.Sequential(nn.RNNCell(3, 4)), {nn.RNNCell})
        >>> q[0](ember.randn(2, 3)).shape
        ember.Size([2, 4])
    """

    mode = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", dtype: QDType | Any = qint8) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(f"dynamic quantized RNNCell: unknown nonlinearity "
                                f"{nonlinearity!r} (expected 'tanh' or 'relu')")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, dtype)

    def _float_cell(self) -> Module:
        return nn.RNNCell(self.input_size, self.hidden_size, self.bias, self.nonlinearity)

    @classmethod
    def _made_like(cls, mod: Module, dtype: Any) -> _DynamicCell:
        return cls(mod.input_size, mod.hidden_size, mod.bias, mod.nonlinearity, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]


class LSTMCell(_DynamicCell):
    """A dynamically quantized ``nn.LSTMCell``: ``(h, c)`` in (zeros when not given) and out."""

    mode = "LSTMCell"

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple[Tensor, Tensor]:
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentError("dynamic quantized LSTMCell: hx must be a tuple (h, c), got "
                                f"{type(hx).__name__}")
        h, c = self._step(input, *(hx if hx is not None else (None, None)))
        return h, c


class GRUCell(_DynamicCell):
    """A dynamically quantized ``nn.GRUCell``."""

    mode = "GRUCell"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]
