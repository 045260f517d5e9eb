"""Dynamically quantized ``LSTM`` and ``GRU`` (``torch.ao.nn.quantized.dynamic``): int8 (or
float16) weights, float32 input, states and output. As PyTorch's CPU kernels: each layer
projects its whole input sequence at once with a dynamically quantized linear layer (``x W_ihᵀ
+ b_ih``, the input's quantization chosen from the whole sequence), then every step adds the
dynamically quantized ``h W_hhᵀ + b_hh`` and applies the gates in float32. The scan is the
float layers' (:func:`ember.ops.rnn.run_layers` with int8 projections): padded or packed input,
dropout between layers in training."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.backends import quantized as quantized_backend
from ember.dtypes import float16, float32
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError
from ember.nn.module import Module
from ember.nn.utils.rnn import PackedSequence
from ember.ops.creation import from_numpy, tensor
from ember.ops.rnn_cells import gru_step, lstm_step
from ember.quant import kernels
from ember.quant.modules.dynamic import dynamic_linear, float16_weight
from ember.quant.modules.quantized import (
    QuantizedName,
    eager_only,
    load_quantized_weight,
    quantize_weight_tensor,
    save_quantized_weight,
)
from ember.quant.qconfig import default_dynamic_qconfig, float16_dynamic_qconfig
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QDType, qint8
from ember.tensor import Tensor

__all__ = ["LSTM", "GRU"]


class _QuantizedLinearWeights:
    """One int8 weight (centred integers and scales) and its float bias, packed for the engine
    current when made: called on float32 rows, their dynamically quantized projection
    ``x Wᵀ + b`` as that engine computes it."""

    dtype = float32  # (what the float stack's dtype check reads)

    def __init__(self, w: QuantizedTensor, bias: Tensor | None) -> None:
        self.engine = quantized_backend.engine
        self.w = w
        self.centred = kernels.centred(w._int.numpy(), w._zero_point, w._axis)
        self.scales = np.atleast_1d(np.asarray(w._scale, np.float32))
        self.bias = None if bias is None else bias.detach().float().numpy().copy()

    def __call__(self, x: Tensor) -> Tensor:
        return from_numpy(dynamic_linear(x.detach().numpy(), self.centred, self.scales,
                                         self.bias, self.engine))

    def save(self, destination: dict, name: str) -> None:
        """The int8 values, scales, zero points and axis (-1 per tensor) under ``name``."""
        save_quantized_weight(destination, name, self.w)

    @classmethod
    def load(cls, state_dict: Any, name: str, bias: Tensor | None) -> _QuantizedLinearWeights:
        return cls(load_quantized_weight(state_dict, name), bias)


class _Float16LinearWeights:
    """One float16 weight and its float bias: called on float32 rows, fbgemm's float16
    projection ``x Wᵀ + b``."""

    dtype = float32

    def __init__(self, w: Tensor, bias: Tensor | None) -> None:
        self.w16 = float16_weight(w.detach().numpy(), "dynamic quantized LSTM/GRU")
        self.bias = None if bias is None else bias.detach().float().numpy().copy()

    def __call__(self, x: Tensor) -> Tensor:
        return from_numpy(kernels.float16_linear(x.detach().numpy(), self.w16, self.bias,
                                                 False))

    def save(self, destination: dict, name: str) -> None:
        """The float16 values under ``name``."""
        destination[name] = from_numpy(self.w16.copy())

    @classmethod
    def load(cls, state_dict: Any, name: str, bias: Tensor | None) -> _Float16LinearWeights:
        return cls(tensor(state_dict[name]).float(), bias)


class _DynamicWeights(QuantizedName, Module):
    """What the dynamically quantized layers and cells share: the dtype check, their int8
    (or float16) weight pairs quantized from a float module (PyTorch's initial weights when
    made), ``from_float``, and the state dict under PyTorch's parameter names."""

    mode = ""
    _name_prefix = "DynamicQuantized"

    def __init__(self, dtype: QDType | Any) -> None:
        super().__init__()
        if dtype is not qint8 and dtype is not float16:
            raise ArgumentError(f"dynamic quantized {self.mode}: dtype must be ember.qint8 or "
                                f"ember.float16, got {dtype!r}")
        self.dtype = dtype

    def _initial_weights(self, fresh: Module) -> None:
        """Quantizes the weights of ``fresh``, a float module of the same sizes."""
        self._quantize_weights(fresh, default_dynamic_qconfig if self.dtype is qint8
                               else float16_dynamic_qconfig)

    def _suffixes(self) -> list[str]:
        raise NotImplementedError

    @classmethod
    def _made_like(cls, mod: Module, dtype: Any) -> _DynamicWeights:
        raise NotImplementedError

    def _weights_type(self) -> type:
        return _Float16LinearWeights if self.dtype is float16 else _QuantizedLinearWeights

    def _quantize_weights(self, mod: Module, qconfig: Any) -> None:
        def weights(kind: str, suffix: str) -> Any:
            w = getattr(mod, f"weight_{kind}{suffix}")
            bias = getattr(mod, f"bias_{kind}{suffix}") if self.bias else None
            if self.dtype is float16:
                return _Float16LinearWeights(w, bias)
            return _QuantizedLinearWeights(
                quantize_weight_tensor(w, qconfig, f"{self.mode}.weight_{kind}"), bias)

        self._layers = [tuple(weights(kind, suffix) for kind in ("ih", "hh"))
                        for suffix in self._suffixes()]

    @classmethod
    def from_float(cls, mod: Module) -> _DynamicWeights:
        """The dynamically quantized twin of a float module with a ``qconfig`` (its weight
        observer quantizes each weight; float16 weights when the observer's dtype is
        ``float16``)."""
        if not mod.bias:
            raise ArgumentError(f"dynamic quantized {cls.mode}: from_float needs a float "
                                f"{cls.mode} with bias=True, as PyTorch's (got bias=False)")
        dtype = float16 if mod.qconfig.weight().dtype is float16 else qint8
        q = cls._made_like(mod, dtype)
        q._quantize_weights(mod, mod.qconfig)
        return q

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Per weight, under PyTorch's parameter names: its int8 values, scales, zero points
        and axis (-1 per tensor), or its float16 values; and the float bias."""
        for suffix, pair in zip(self._suffixes(), self._layers):
            for kind, lin in zip(("ih", "hh"), pair):
                lin.save(destination, f"{prefix}weight_{kind}{suffix}")
                if lin.bias is not None:
                    destination[f"{prefix}bias_{kind}{suffix}"] = tensor(lin.bias.copy())

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        expected = {}
        self._save_to_state_dict(expected, prefix, False)
        missing = [k for k in expected if k not in state_dict]
        missing_keys.extend(missing)
        if strict:
            unexpected_keys.extend(k for k in state_dict if k.startswith(prefix)
                                   and k not in expected and k not in unexpected_keys)
        if missing:
            return
        for k, v in expected.items():  # (the quantization may be per tensor or per channel)
            if not k.endswith(("_scale", "_zero_point", "_axis")) \
                    and tuple(state_dict[k].shape) != tuple(v.shape):
                error_msgs.append(f"size mismatch for {k}: copying a param with shape "
                                  f"{tuple(state_dict[k].shape)} from checkpoint, the shape in "
                                  f"current model is {tuple(v.shape)}.")
                return
        weights = self._weights_type()
        self._layers = [tuple(
            weights.load(state_dict, f"{prefix}weight_{kind}{suffix}",
                         state_dict.get(f"{prefix}bias_{kind}{suffix}"))
            for kind in ("ih", "hh")) for suffix in self._suffixes()]


class _DynamicRNN(_DynamicWeights):
    """The shared scan of the dynamically quantized recurrent layers."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: QDType | Any = qint8) -> None:
        super().__init__(dtype)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional, self.proj_size = bidirectional, 0
        self._initial_weights(getattr(nn, self.mode)(input_size, hidden_size, num_layers, bias,
                                                     batch_first, dropout, bidirectional))

    @classmethod
    def from_float(cls, mod: Module) -> _DynamicWeights:
        """As :meth:`_DynamicWeights.from_float`; a float layer with ``proj_size`` is refused."""
        if getattr(mod, "proj_size", 0):
            raise ArgumentError(f"dynamic quantized {cls.mode}: proj_size is not supported")
        return super().from_float(mod)

    @classmethod
    def _made_like(cls, mod: Module, dtype: Any) -> _DynamicRNN:
        return cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                   mod.dropout, mod.bidirectional, dtype)

    def _suffixes(self) -> list[str]:
        directions = 2 if self.bidirectional else 1
        return [f"_l{layer}" + ("_reverse" if d else "") for layer in range(self.num_layers)
                for d in range(directions)]

    def _params(self, layer: int, d: int) -> tuple:
        """What :meth:`ember.nn.RNNBase._run` scans with: the int8 projections (their biases
        inside) of this layer and direction."""
        ih, hh = self._layers[layer * (2 if self.bidirectional else 1) + d]
        return ih, hh, None, None, None

    # the float layers' stack (padded or packed input, dropout) and PyTorch's public checks
    _run, _checked_states = nn.RNNBase._run, nn.RNNBase._checked_states
    check_input, check_hidden_size = nn.RNNBase.check_input, nn.RNNBase.check_hidden_size
    get_expected_hidden_size = nn.RNNBase.get_expected_hidden_size
    check_forward_args, permute_hidden = nn.RNNBase.check_forward_args, nn.RNNBase.permute_hidden

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple:
        packed = isinstance(input, PackedSequence)
        data = input.data if packed else input
        if not isinstance(data, Tensor) or data.dtype is not float32:
            raise DTypeError(f"dynamic quantized {self.mode}: expected a float32 input (as "
                            f"PyTorch's), got {getattr(data, 'dtype', type(data).__name__)!r}")
        if not packed and input.ndim != 3:
            raise ArgumentError(f"dynamic quantized {self.mode}: input must have 3 dimensions "
                                f"(as PyTorch's; unbatched input is not taken), got shape "
                                f"{tuple(input.shape)}. Hint: unsqueeze the batch dimension")
        if not packed and input.shape[1 if self.batch_first else 0] == 0:
            raise ArgumentError(f"dynamic quantized {self.mode}: expected sequence length to be "
                                f"larger than 0, got input of shape {tuple(input.shape)}")
        if self.mode == "LSTM" and hx is not None \
                and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentTypeError("dynamic quantized LSTM: hx must be a tuple (h_0, c_0) of the "
                                    f"initial hidden and cell states, got {type(hx).__name__}")
        h0, c0 = (hx, None) if self.mode == "GRU" else (hx if hx is not None else (None, None))
        with eager_only(f"dynamic quantized {self.mode}"):
            out, h_n, c_n = self._run(input, h0, c0)
        return (out, h_n) if self.mode == "GRU" else (out, (h_n, c_n))

    def extra_repr(self) -> str:
        # PyTorch's: the sizes, then each setting that is not its default (no dtype)
        s = f"{self.input_size}, {self.hidden_size}"
        defaults = {"num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0,
                    "bidirectional": False}
        return s + "".join(f", {k}={getattr(self, k)}" for k, v in defaults.items()
                           if getattr(self, k) != v)


class LSTM(_DynamicRNN):
    """A dynamically quantized ``nn.LSTM`` (what ``quantize_dynamic`` makes of one).

    Example:
        >>> from ember.ao.quantization import quantize_dynamic
        >>> q = quantize_dynamic(nn.Sequential(nn.LSTM(3, 4)), {nn.LSTM})
        >>> out, (h, c) = q[0](ember.randn(5, 2, 3))
        >>> out.shape, h.shape
        (ember.Size([5, 2, 4]), ember.Size([1, 2, 4]))
    """

    mode = "LSTM"
    get_expected_cell_size = nn.LSTM.get_expected_cell_size
    check_forward_args, permute_hidden = nn.LSTM.check_forward_args, nn.LSTM.permute_hidden

    def _cell(self) -> Any:
        return lstm_step


class GRU(_DynamicRNN):
    """A dynamically quantized ``nn.GRU``."""

    mode = "GRU"

    def _cell(self) -> Any:
        return gru_step
