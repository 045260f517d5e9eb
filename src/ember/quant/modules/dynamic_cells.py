"""Dynamically quantized ``RNNCell``, ``LSTMCell`` and ``GRUCell``
(``torch.ao.nn.quantized.dynamic``): int8 (or float16) weights, float32 input and states. As
PyTorch's ``quantized_*_cell`` kernels: one step adds the dynamically quantized projections
``x W_ihᵀ + b_ih`` and ``h W_hhᵀ + b_hh`` (each quantizing its own float input) and applies
the gates in float32."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import nn
from ember.dtypes import float32
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ember.nn.module import Module
from ember.ops.creation import zeros
from ember.ops.rnn_cells import gru_step, lstm_step, relu_step, tanh_step
from ember.quant.modules.dynamic_rnn import _DynamicWeights
from ember.quant.modules.quantized import eager_only
from ember.quant.qtypes import QDType, qint8
from ember.tensor import Tensor

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]


class _DynamicCell(_DynamicWeights):
    """The shared step of the dynamically quantized cells (their weights, state dict and
    ``from_float``: :class:`_DynamicWeights`, as the dynamic layers')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 dtype: QDType | Any = qint8) -> None:
        super().__init__(dtype)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self._initial_weights(self._float_cell())

    def _float_cell(self) -> Module:
        return getattr(nn, self.mode)(self.input_size, self.hidden_size, self.bias)

    @classmethod
    def _made_like(cls, mod: Module, dtype: Any) -> _DynamicCell:
        return cls(mod.input_size, mod.hidden_size, mod.bias, dtype)

    def _suffixes(self) -> list[str]:
        return [""]

    def _cell_step(self) -> Callable:
        raise NotImplementedError

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
            if state is None:
                continue
            if not isinstance(state, Tensor):
                raise ArgumentTypeError(f"{name}: {label} must be a Tensor, got "
                                        f"{type(state).__name__}")
            if state.dtype is not float32:
                raise DTypeError(f"{name}: expected a float32 {label} (as the input), got "
                                 f"{state.dtype!r}")
            if tuple(state.shape) != shape:
                raise ShapeError(f"{name}: expected a {label} of shape {shape} (batch size "
                                 f"of the input, hidden_size), got {tuple(state.shape)}")
        empty = zeros(*shape)
        ih, hh = self._layers[0]
        with eager_only(name):
            return self._cell_step()(ih(input), empty if hx is None else hx,
                                     empty if cx is None else cx, hh, None)

    def _repr_options(self) -> list[str]:
        return [] if self.bias is True else [f"bias={self.bias}"]

    def extra_repr(self) -> str:
        return ", ".join([str(self.input_size), str(self.hidden_size), *self._repr_options()])


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

    def _cell_step(self) -> Callable:
        return relu_step if self.nonlinearity == "relu" else tanh_step

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]

    def _repr_options(self) -> list[str]:
        relu = [] if self.nonlinearity == "tanh" else [f"nonlinearity={self.nonlinearity}"]
        return super()._repr_options() + relu


class LSTMCell(_DynamicCell):
    """A dynamically quantized ``nn.LSTMCell``: ``(h, c)`` in (zeros when not given) and out."""

    mode = "LSTMCell"

    def _cell_step(self) -> Callable:
        return lstm_step

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple[Tensor, Tensor]:
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentError("dynamic quantized LSTMCell: hx must be a tuple (h, c), got "
                                f"{type(hx).__name__}")
        h, c = self._step(input, *(hx if hx is not None else (None, None)))
        return h, c


class GRUCell(_DynamicCell):
    """A dynamically quantized ``nn.GRUCell``."""

    mode = "GRUCell"

    def _cell_step(self) -> Callable:
        return gru_step

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]
