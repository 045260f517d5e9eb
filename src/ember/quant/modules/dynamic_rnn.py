"""Dynamically quantized ``LSTM`` and ``GRU`` (``torch.ao.nn.quantized.dynamic``): int8
weights, float input, states and output. As PyTorch's CPU kernels: each layer projects its
whole input sequence at once with a dynamically quantized linear layer (``x W_ihᵀ + b_ih``,
the input's quantization chosen from the whole sequence), then every step adds the
dynamically quantized ``h W_hhᵀ + b_hh`` and applies the gates in float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor, zeros
from ember.ops.join import cat, stack
from ember.quant import kernels
from ember.quant.modules.dynamic import dynamic_linear
from ember.quant.modules.quantized import eager_only, quantize_weight_tensor
from ember.quant.qconfig import default_dynamic_qconfig
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QDType, qint8
from ember.tensor import Tensor

__all__ = ["LSTM", "GRU"]


class _QuantizedLinearWeights:
    """One int8 weight (centred integers and scales) and its float bias."""

    def __init__(self, w: QuantizedTensor, bias: Tensor | None) -> None:
        self.w = w
        self.centred = kernels.centred(w._int.numpy(), w._zero_point, w._axis)
        self.scales = np.atleast_1d(np.asarray(w._scale, np.float32))
        self.bias = None if bias is None else bias.detach().float().numpy().copy()

    def __call__(self, x: Tensor) -> Tensor:
        a = x.detach().numpy().astype(np.float32, copy=False)
        out = dynamic_linear(a.reshape(-1, a.shape[-1]), self.centred, self.scales, self.bias)
        return from_numpy(out.reshape(*a.shape[:-1], -1))


class _DynamicRNN(Module):
    """The shared scan of the dynamically quantized recurrent layers."""

    mode = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: QDType = qint8) -> None:
        super().__init__()
        if dtype is not qint8:
            raise ValueError(f"dynamic quantized {self.mode}: only dtype=ember.qint8 is "
                             f"supported, got {dtype!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional = bidirectional
        fresh = getattr(nn, self.mode)(input_size, hidden_size, num_layers, bias, batch_first,
                                       dropout, bidirectional)  # (PyTorch's initial weights)
        self._quantize_weights(fresh, default_dynamic_qconfig)

    def _quantize_weights(self, mod: Module, qconfig: Any) -> None:
        self._layers = [tuple(
            _QuantizedLinearWeights(
                quantize_weight_tensor(getattr(mod, f"weight_{kind}{suffix}"), qconfig,
                                       f"{self.mode}.weight_{kind}"),
                getattr(mod, f"bias_{kind}{suffix}") if self.bias else None)
            for kind in ("ih", "hh")) for suffix in self._suffixes()]

    @classmethod
    def from_float(cls, mod: Module) -> _DynamicRNN:
        """The dynamically quantized twin of a float ``LSTM``/``GRU`` with a ``qconfig``
        (its weight observer quantizes each weight)."""
        if getattr(mod, "proj_size", 0):
            raise ValueError(f"dynamic quantized {cls.mode}: proj_size is not supported")
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                mod.dropout, mod.bidirectional)
        q._quantize_weights(mod, mod.qconfig)
        return q

    def _suffixes(self) -> list[str]:
        directions = 2 if self.bidirectional else 1
        return [f"_l{layer}" + ("_reverse" if d else "") for layer in range(self.num_layers)
                for d in range(directions)]

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Per weight: its int8 values, scales, zero points and axis (-1 per tensor), and the
        float bias, under PyTorch's parameter names."""
        for suffix, pair in zip(self._suffixes(), self._layers):
            for kind, lin in zip(("ih", "hh"), pair):
                name = f"{prefix}weight_{kind}{suffix}"
                w = lin.w
                destination[name] = w._int
                destination[name + "_scale"] = tensor(np.atleast_1d(w._scale), dtype="float64")
                destination[name + "_zero_point"] = tensor(np.atleast_1d(w._zero_point),
                                                           dtype="int64")
                destination[name + "_axis"] = tensor([-1 if w._axis is None else w._axis])
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
        for suffix, k in zip(self._suffixes(), range(len(self._layers))):
            pair = []
            for kind in ("ih", "hh"):
                name = f"{prefix}weight_{kind}{suffix}"
                axis = int(state_dict[name + "_axis"].item())
                scale = state_dict[name + "_scale"].numpy().copy()
                zero_point = state_dict[name + "_zero_point"].numpy().copy()
                w = QuantizedTensor(state_dict[name].clone(), qint8,
                                    float(scale[0]) if axis < 0 else scale,
                                    int(zero_point[0]) if axis < 0 else zero_point,
                                    None if axis < 0 else axis)
                pair.append(_QuantizedLinearWeights(
                    w, state_dict.get(f"{prefix}bias_{kind}{suffix}")))
            self._layers[k] = tuple(pair)

    def _step(self, gates_x: Tensor, h: Tensor, c: Any, hh: _QuantizedLinearWeights) -> tuple:
        raise NotImplementedError

    def forward(self, input: Tensor, hx: Any = None) -> tuple:
        if not isinstance(input, Tensor) or input.ndim != 3:
            raise ValueError(f"dynamic quantized {self.mode}: input must have 3 dimensions "
                             f"(as PyTorch's; unbatched input is not taken), got shape "
                             f"{tuple(getattr(input, 'shape', ()))}. Hint: unsqueeze the "
                             "batch dimension")
        x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[-1] != self.input_size:
            raise ValueError(f"dynamic quantized {self.mode}: input.size(-1) must be equal to "
                             f"input_size {self.input_size}, got {x.shape[-1]}")
        x = x.float()
        directions = 2 if self.bidirectional else 1
        shape = (self.num_layers * directions, x.shape[1], self.hidden_size)
        h0, c0 = self._initial(hx, shape)
        h_out, c_out = [], []
        with eager_only(f"dynamic quantized {self.mode}"):
            for layer in range(self.num_layers):
                outs = []
                for d in range(directions):
                    k = layer * directions + d
                    ih, hh = self._layers[k]
                    gates_x = ih(x)  # (the whole sequence at once)
                    h, c = h0[k], None if c0 is None else c0[k]
                    steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
                    ys = [None] * x.shape[0]
                    for t in steps:
                        h, c = self._step(gates_x[t], h, c, hh)
                        ys[t] = h
                    outs.append(stack(ys))
                    h_out.append(h)
                    c_out.append(c)
                x = outs[0] if directions == 1 else cat(outs, dim=-1)
        h_n = stack(h_out)
        out = x.transpose(0, 1) if self.batch_first else x
        return (out, h_n) if c0 is None else (out, (h_n, stack(c_out)))

    def _initial(self, hx: Any, shape: tuple) -> tuple:
        states = (hx,) if self.mode == "GRU" else (hx if hx is not None else (None, None))
        out = []
        for s in states:
            if s is None:
                s = zeros(*shape)
            if tuple(s.shape) != shape:
                raise ValueError(f"dynamic quantized {self.mode}: expected a state of shape "
                                 f"{shape}, got {tuple(s.shape)}")
            out.append(s.float())
        return (out[0], None) if self.mode == "GRU" else tuple(out)

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"bidirectional={self.bidirectional}, dtype=ember.qint8")


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

    def _step(self, gates_x: Tensor, h: Tensor, c: Any, hh: _QuantizedLinearWeights) -> tuple:
        i, f, g, o = (gates_x + hh(h)).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c


class GRU(_DynamicRNN):
    """A dynamically quantized ``nn.GRU``."""

    mode = "GRU"

    def _step(self, gates_x: Tensor, h: Tensor, c: Any, hh: _QuantizedLinearWeights) -> tuple:
        xr, xz, xn = gates_x.chunk(3, -1)
        hr, hz, hn = hh(h).chunk(3, -1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return (1 - z) * n + z * h, None
