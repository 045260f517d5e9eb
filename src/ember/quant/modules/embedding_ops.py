"""Weight-only quantized ``Embedding`` and ``EmbeddingBag`` (``torch.ao.nn.quantized``): each
row of the table is ``quint8`` with its own float scale and float zero point
(``per_channel_affine_float_qparams``: ``q = nearbyint(w * (1 / scale) + zero_point)``);
lookups return float32, ``fma(scale, q, bias)`` with ``bias = -zero_point * scale``, and a
bag sums its rows as fbgemm's ``EmbeddingSpMDM`` does, ``out = fma(scale, q, out + bias)``
row after row (each scale and bias first multiplied by the row's ``per_sample_weights``).
An ``EmbeddingBag`` may hold a 4-bit (``quint4x2``) table instead: values in [0, 15], and its
scales and biases rounded to float16 for the sums, as fbgemm's 4-bit ``EmbeddingSpMDMNBit``
stores them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError, DTypeError, IndexOutOfRange
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.quant.modules.quantized import QuantizedName, _unexpected, eager_only
from ember.quant.qtensor import QuantizedTensor, quantize_per_channel
from ember.quant.qtypes import QDType, per_channel_affine_float_qparams, quint4x2, quint8
from ember.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]

_F32 = np.float32


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (exact in float64 for float32 ``a`` and
    ``c`` and 8-bit integers ``b``)."""
    return (a.astype(np.float64) * b + c.astype(np.float64)).astype(_F32)


class Embedding(QuantizedName, Module):
    """A weight-only quantized ``nn.Embedding``: a ``quint8`` table with per-row float
    scales and zero points; integer indices in, float32 rows out.

    Example:
        >>> m = Embedding(10, 3)
        >>> m(ember.tensor([[1, 2], [0, 9]])).shape
        ember.Size([2, 2, 3])
    """

    _dtypes: tuple = (quint8,)

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: QuantizedTensor | None = None, dtype: QDType = quint8) -> None:
        super().__init__()
        if dtype not in self._dtypes:
            raise ArgumentError(f"quantized {type(self).__name__}: dtype must be one of "
                                f"{list(self._dtypes)}, got {dtype!r}{self._hint(dtype)}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse, self.dtype = scale_grad_by_freq, sparse, dtype
        if _weight is None:
            _weight = QuantizedTensor(
                from_numpy(np.zeros((num_embeddings, embedding_dim), np.uint8)), dtype,
                np.ones(num_embeddings, _F32), np.zeros(num_embeddings, _F32), 0)
        self.set_weight(_weight)

    def set_weight(self, w: QuantizedTensor) -> None:
        if not isinstance(w, QuantizedTensor) or w._axis != 0 or w.dtype is not self.dtype \
                or w.qscheme() is not per_channel_affine_float_qparams:
            raise ArgumentError(f"quantized {type(self).__name__}: the weight must be "
                                f"{self.dtype!r}, quantized per row (axis 0) with float scales and "
                                "zero points (per_channel_affine_float_qparams)")
        if tuple(w.shape) != (self.num_embeddings, self.embedding_dim):
            raise ArgumentError(f"quantized {type(self).__name__}: the weight has shape "
                                f"{tuple(w.shape)}, expected ({self.num_embeddings}, "
                                f"{self.embedding_dim})")
        self._w = w
        self._q = w._int.numpy().astype(np.float64)
        self._scale = np.asarray(w._scale, _F32)
        self._bias = -np.asarray(w._zero_point, _F32) * self._scale
        if self.dtype is quint4x2:  # (fbgemm's 4-bit rows keep them as float16)
            self._scale, self._bias = (self._scale.astype(np.float16).astype(_F32),
                                       self._bias.astype(np.float16).astype(_F32))

    def weight(self) -> QuantizedTensor:
        return self._w

    @classmethod
    def _hint(cls, dtype: Any) -> str:
        if dtype is quint4x2 and quint4x2 not in cls._dtypes:
            return " (PyTorch's 4-bit Embedding lookup fails: use an EmbeddingBag)"
        return ""

    def _rows(self, indices: Any) -> np.ndarray:
        if not isinstance(indices, Tensor) or indices.dtype.is_floating_point \
                or indices.dtype.name == "bool":
            raise DTypeError(f"quantized {type(self).__name__}: expected an integer tensor of "
                             f"indices, got {getattr(indices, 'dtype', type(indices).__name__)}")
        with eager_only(f"quantized {type(self).__name__}"):
            idx = indices.numpy().astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_embeddings):
            bad = idx[(idx < 0) | (idx >= self.num_embeddings)][0]
            raise IndexOutOfRange(f"quantized {type(self).__name__}: index {bad} is out of range "
                                  f"for {self.num_embeddings} embeddings")
        return idx

    def forward(self, indices: Tensor) -> Tensor:
        idx = self._rows(indices)
        if idx.ndim not in (1, 2):
            raise ArgumentError(f"quantized Embedding: expected 1-D or 2-D indices (as PyTorch's "
                                f"quantized lookup), got shape {idx.shape}")
        out = _fma(self._scale[idx][..., None], self._q[idx], self._bias[idx][..., None])
        return from_numpy(out)

    @classmethod
    def from_float(cls, mod: Module) -> Embedding:
        """The quantized table of a float ``nn.Embedding`` (or ``EmbeddingBag``) with a
        ``qconfig`` whose weight observer has ``per_channel_affine_float_qparams``."""
        observer = getattr(mod, "weight_fake_quant", None)
        if observer is None:
            qconfig = getattr(mod, "qconfig", None)
            if qconfig is None or qconfig.weight is None:
                raise ArgumentError(f"{cls.__name__}.from_float: the float module needs a qconfig "
                                    "(float_qparams_weight_only_qconfig)")
            observer = qconfig.weight()
        if observer.qscheme is not per_channel_affine_float_qparams \
                or observer.dtype not in cls._dtypes:
            raise ArgumentError(f"{cls.__name__} quantization is only supported with "
                                "float_qparams_weight_only_qconfig (quint8, "
                                "per_channel_affine_float_qparams)"
                                + (" or its _4bit twin (quint4x2)" if quint4x2 in cls._dtypes
                                   else "") + f", got {observer.dtype!r}, {observer.qscheme!r}"
                                + cls._hint(observer.dtype))
        observer(mod.weight)
        scale, zero_point = observer.calculate_qparams()
        w = quantize_per_channel(mod.weight.detach().float(), scale.float(), zero_point.float(),
                                 0, observer.dtype)
        return cls._like(mod, w)

    @classmethod
    def _like(cls, mod: Module, w: QuantizedTensor) -> Embedding:
        return cls(mod.num_embeddings, mod.embedding_dim, mod.padding_idx, mod.max_norm,
                   mod.norm_type, mod.scale_grad_by_freq, mod.sparse, w, w.dtype)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        destination[prefix + "weight"] = self._w._int
        destination[prefix + "weight_scale"] = tensor(np.asarray(self._w._scale, _F32).copy())
        destination[prefix + "weight_zero_point"] = tensor(np.asarray(self._w._zero_point,
                                                                      _F32).copy())

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        names = ["weight", "weight_scale", "weight_zero_point"]
        _unexpected(state_dict, prefix, names, strict, unexpected_keys)
        missing = [prefix + n for n in names if prefix + n not in state_dict]
        if missing:
            missing_keys.extend(missing)
            return
        get = {n: state_dict[prefix + n] for n in names}
        try:
            self.set_weight(QuantizedTensor(
                get["weight"].clone(), self.dtype, get["weight_scale"].numpy().astype(_F32),
                get["weight_zero_point"].numpy().astype(_F32), 0))
        except ValueError as e:
            error_msgs.append(f"{prefix}weight: {e}")

    def extra_repr(self) -> str:
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self.dtype!r}, qscheme={per_channel_affine_float_qparams!r}")


class EmbeddingBag(Embedding):
    """A weight-only quantized ``nn.EmbeddingBag`` summing each bag's rows (``mode='sum'``,
    optionally weighted by ``per_sample_weights``): bags are the rows of 2-D ``indices``, or
    start at ``offsets`` in 1-D ``indices``.

    Example:
        >>> m = EmbeddingBag(10, 3)
        >>> m(ember.tensor([1, 2, 4, 5]), ember.tensor([0, 3])).shape
        ember.Size([2, 3])
    """

    _dtypes: tuple = (quint8, quint4x2)

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "sum",
                 sparse: bool = False, _weight: QuantizedTensor | None = None,
                 include_last_offset: bool = False, dtype: QDType = quint8) -> None:
        if mode != "sum":  # (PyTorch's module accepts 'mean' and 'max' but sums anyway)
            raise ArgumentError(f"quantized EmbeddingBag: only mode='sum' is supported, got "
                                f"mode={mode!r} (PyTorch's quantized module sums whatever the "
                                "mode)")
        super().__init__(num_embeddings, embedding_dim, None, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    @classmethod
    def _like(cls, mod: Module, w: QuantizedTensor) -> EmbeddingBag:
        return cls(mod.num_embeddings, mod.embedding_dim, mod.max_norm, mod.norm_type,
                   mod.scale_grad_by_freq, mod.mode, mod.sparse, w, mod.include_last_offset,
                   w.dtype)

    def _bags(self, idx: np.ndarray, offsets: Tensor | None) -> tuple[np.ndarray, int]:
        """The bag each index belongs to (-1 or the number of bags for an index in none: before
        the first offset, or after the last with ``include_last_offset``), and the number of
        bags."""
        if idx.ndim == 2:
            if offsets is not None or self.include_last_offset:
                raise ArgumentError("quantized EmbeddingBag: 2-D indices (one bag per row) take no "
                                    "offsets and no include_last_offset (PyTorch's quantized bag "
                                    "then drops the last row)")
            return np.repeat(np.arange(idx.shape[0]), idx.shape[1]), idx.shape[0]
        if idx.ndim != 1 or offsets is None:
            raise ArgumentError(f"quantized EmbeddingBag: expected 2-D indices, or 1-D indices "
                                f"with offsets, got indices of shape {idx.shape} and offsets "
                                f"{None if offsets is None else tuple(offsets.shape)}")
        starts = offsets.numpy().astype(np.int64).reshape(-1)
        if self.include_last_offset and not starts.size:
            raise ArgumentError("quantized EmbeddingBag: with include_last_offset, offsets must "
                                "hold at least the end of the last bag, got no offsets")
        if starts.size and (starts[0] != 0 or np.any(np.diff(starts) < 0)
                            or starts[-1] > idx.size):
            raise ArgumentError(f"quantized EmbeddingBag: offsets must start at 0 and not "
                                f"decrease up to {idx.size}, got {starts.tolist()}")
        if self.include_last_offset and self.dtype is quint4x2 and starts[-1] != idx.size:
            raise ArgumentError(f"quantized EmbeddingBag: with include_last_offset the last offset "
                                f"must be {idx.size} (the number of indices), got "
                                f"{starts.tolist()}; PyTorch's 4-bit bags check it (its 8-bit "
                                "ones drop the indices past it)")
        count = starts.size - 1 if self.include_last_offset else starts.size
        return np.searchsorted(starts, np.arange(idx.size), side="right") - 1, count

    def forward(self, indices: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None,
                compressed_indices_mapping: Tensor | None = None) -> Tensor:
        if compressed_indices_mapping is not None:
            raise ArgumentError("quantized EmbeddingBag: pruned tables "
                                "(compressed_indices_mapping) are not supported")
        idx = self._rows(indices)
        bags, count = self._bags(idx, offsets)
        idx = idx.reshape(-1)
        scale, bias = self._scale[idx], self._bias[idx]
        if per_sample_weights is not None:
            weights = per_sample_weights.detach().float().numpy().reshape(-1)
            if weights.shape != idx.shape:
                raise ArgumentError(f"quantized EmbeddingBag: per_sample_weights has "
                                    f"{weights.size} elements, indices {idx.size}")
            scale, bias = scale * weights, bias * weights
        used = (bags >= 0) & (bags < count)
        idx, bags, scale, bias = idx[used], bags[used], scale[used], bias[used]
        out = np.zeros((count, self.embedding_dim), _F32)
        position = np.arange(idx.size) - np.searchsorted(bags, bags, side="left")
        for p in range(int(position.max()) + 1 if idx.size else 0):  # row after row, per bag
            at = position == p
            rows = bags[at]
            out[rows] = _fma(scale[at][:, None], self._q[idx[at]],
                             out[rows] + bias[at][:, None])
        return from_numpy(out)
