"""``HistogramObserver``: a running histogram of the values seen, and quantization parameters
from the range that minimizes the L2 quantization error over it (PyTorch's search, from
caffe2's ``NormMinimization``). The default activation observer of PyTorch's x86/fbgemm
qconfig. Computed in float32 as PyTorch's tensor code does (its ``histc``, ``linspace`` and
``bincount``), so the histograms and the chosen ranges agree.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.ops.creation import from_numpy, linspace, tensor
from ember.ops.search import histc
from ember.quant.observer import _EPS, UniformQuantizationObserverBase, refuse_other_kwargs
from ember.quant.qtypes import QDType, QScheme, per_tensor_affine, quint8
from ember.tensor import Tensor

__all__ = ["HistogramObserver", "default_histogram_observer"]

_F32 = np.float32


def _histc(x: np.ndarray, bins: int, low: Any, high: Any) -> np.ndarray:
    """float32 ``torch.histc`` of ``x`` over ``[low, high]`` (:func:`ember.histc`)."""
    return histc(from_numpy(np.ascontiguousarray(x, _F32)), bins, float(low), float(high)).numpy()


def _linspace(start: Any, end: Any, steps: int) -> np.ndarray:
    """float32 ``torch.linspace`` (:func:`ember.linspace`, which gives PyTorch's values)."""
    return linspace(float(start), float(end), steps).numpy()


class HistogramObserver(UniformQuantizationObserverBase):
    """Keeps a ``bins``-bin histogram of the values seen (rebinned as the range grows) and
    picks the range minimizing the L2 error of quantizing it.

    Example:
        >>> obs = HistogramObserver(reduce_range=True)
        >>> _ = obs(ember.linspace(-1, 3, 1000))
        >>> obs.calculate_qparams()
        (tensor([0.0315]), tensor([32], dtype=ember.int32))
    """

    def __init__(self, bins: int = 2048, dtype: QDType = quint8,
                 qscheme: QScheme = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        if qscheme.per_channel:
            raise NotImplementedError("HistogramObserver's qscheme only supports "
                                      "per_tensor_symmetric and per_tensor_affine")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.bins = bins
        self.register_buffer("histogram", tensor(np.zeros(bins, _F32)))
        self.register_buffer("min_val", tensor(float("inf")))
        self.register_buffer("max_val", tensor(float("-inf")))
        self.dst_nbins = 2 ** dtype.bits
        self.upsample_rate = 16

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().numpy().astype(_F32, copy=False).ravel()
        if np.isnan(x).any():
            raise ArgumentError("HistogramObserver: the input holds NaN, which a histogram cannot "
                                "bin (PyTorch's histc refuses its range too)")
        if np.isinf(x).any():
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[~np.isinf(x)]
            if x.size == 0:
                return x_orig
        x_min, x_max = x.min(), x.max()
        hist = self.histogram.numpy()
        cur_min, cur_max = self.min_val.numpy()[()], self.max_val.numpy()[()]
        if cur_min == np.inf or cur_max == -np.inf:
            new_min, new_max, hist = x_min, x_max, _histc(x, self.bins, x_min, x_max)
        else:
            new_min, new_max = min(cur_min, x_min), max(cur_max, x_max)
            update = _histc(x, self.bins, new_min, new_max)
            if new_min == cur_min and new_max == cur_max:
                hist = hist + update
            elif cur_min == cur_max:
                hist = _histc(np.array([cur_min], _F32), self.bins, new_min, new_max) * \
                    hist.sum(dtype=_F32) + update
            else:
                hist = update + self._upscale(hist, cur_min, cur_max, new_min, new_max)
        self.histogram = from_numpy(hist.astype(_F32))
        self.min_val = from_numpy(np.asarray(new_min, _F32))
        self.max_val = from_numpy(np.asarray(new_max, _F32))
        return x_orig

    def _upscale(self, hist: np.ndarray, orig_min: Any, orig_max: Any, new_min: Any,
                 new_max: Any) -> np.ndarray:
        """The old histogram's mass, from 16 sub-bins each, in the new range's bins."""
        rate = self.upsample_rate
        fine = np.repeat(hist, rate) / _F32(rate)
        size = (_F32(orig_max) - _F32(orig_min)) / _F32(self.bins * rate)
        mids = _linspace(orig_min, orig_max, self.bins * rate + 1)[:-1] + _F32(0.5) * size
        edges = _linspace(new_min, new_max, self.bins + 1)
        index = np.clip(np.searchsorted(edges, mids, side="right") - 1, 0, self.bins - 1)
        out = np.zeros(self.bins, _F32)
        np.add.at(out, index, fine)  # in order, in float32, as torch.bincount
        return out

    def _quantization_error(self, start: int, end: int) -> float:
        hist = self.histogram.numpy()
        bin_width = (float(self.max_val.item()) - float(self.min_val.item())) / self.bins
        dst_width = bin_width * (end - start + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        w, dw = _F32(bin_width), _F32(dst_width)
        begin = (np.arange(self.bins) - start).astype(_F32) * w
        src_end = begin + w
        dst_begin = np.clip(np.floor(begin / dw), 0, self.dst_nbins - 1)
        dst_end = np.clip(np.floor(src_end / dw), 0, self.dst_nbins - 1)
        density = hist / w

        def l2(a: Any, b: Any) -> np.ndarray:
            a, b = _F32(a) if np.isscalar(a) else a, _F32(b) if np.isscalar(b) else b
            return density * ((b * b * b - a * a * a) / _F32(3))

        half = _F32(dst_width / 2)
        norm = np.zeros(self.bins, _F32)
        norm += l2(begin - (dst_begin + _F32(0.5)) * dw, np.full(self.bins, half, _F32))
        norm += (dst_end - dst_begin - _F32(1)) * l2(-half, half)
        norm += l2(_F32(-dst_width / 2), src_end - (dst_end * dw + dw / _F32(2)))
        return float(norm.sum(dtype=_F32))

    def _non_linear_param_search(self) -> tuple[np.ndarray, np.ndarray]:
        hist = self.histogram.numpy()
        low, high = self.min_val.numpy(), self.max_val.numpy()
        bin_width = (high - low) / _F32(self.bins)
        total = float(hist.sum(dtype=_F32))
        csum = np.cumsum(hist, dtype=_F32)
        stepsize, alpha, beta = 1e-5, 0.0, 1.0
        start, end = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            left, right = start, end
            while left < end and csum[left] < _F32(next_alpha * total):
                left += 1
            while right > start and csum[right] > _F32(next_beta * total):
                right -= 1
            next_start, next_end = start, end
            if (left - start) > (end - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start and next_end == end:
                continue
            norm = self._quantization_error(next_start, next_end)
            if norm > norm_min:
                break
            norm_min, start, end = norm, next_start, next_end
        return low + bin_width * _F32(start), low + bin_width * _F32(end + 1)

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        if self.min_val.item() == float("inf") and self.max_val.item() == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return tensor([1.0]), tensor([0])
        return self._calculate_qparams(*self._non_linear_param_search())

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any) -> None:
        if prefix + "histogram" in state_dict:  # the bins come with the values
            self.histogram = tensor(state_dict[prefix + "histogram"]).float().clone()
        super()._load_from_state_dict(state_dict, prefix, *args)


default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
