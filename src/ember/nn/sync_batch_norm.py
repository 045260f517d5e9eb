"""``SyncBatchNorm``: batch normalisation whose training statistics cover the whole batch,
split over the processes of a group, as ``torch.nn.SyncBatchNorm``.

``nn`` cannot import ``ember.distributed`` (a layer above it), so the distributed package
plugs in: importing it registers a *statistics reducer* here (:func:`register_stat_reducer`).
For a process group (``None``: the world) the reducer gives a function summing a tensor over
the group's ranks, differentiably (its gradient sums every rank's, so each rank's input
gradient is that of the sum of all ranks' losses, as PyTorch's), or ``None`` when the group
is one process or no group exists. Then, and in evaluation, the layer is a plain
``BatchNorm`` (PyTorch raises on CPU in a single process instead).

Each training step sums the per-channel element count and sum, then the squared deviations
from the global mean (two all-reduces, in float64: exact, unlike E[x²] − E[x]², which
cancels); the statistics of half-precision input are taken in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.nn.normalization import _BatchNorm
from ember.ops.normalization import _affine, _per_channel, _update_batch_stats
from ember.tensor import Tensor

__all__ = ["SyncBatchNorm"]

StatReducer = Callable[[Any], Callable[[Tensor], Tensor] | None]
_REDUCER: list[StatReducer] = []  # at most one: the distributed package's


def register_stat_reducer(reducer: StatReducer) -> None:
    """Installs how :class:`SyncBatchNorm` sums statistics across processes:
    ``reducer(process_group)`` returns a differentiable sum over the group's ranks, or None
    for a single process. ``ember.distributed`` registers one when imported; a later call
    replaces it."""
    _REDUCER[:] = [reducer]


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of ``(N, C, *)`` inputs with the statistics of the batch of every
    rank of ``process_group`` (the world by default) in training; in a single process, or in
    evaluation, it is ``BatchNorm``. :meth:`convert_sync_batchnorm` converts a model's batch
    norms.

    Example:
        >>> bn = nn.SyncBatchNorm(3)   # one process: BatchNorm's statistics
        >>> bn(ember.randn(4, 3, 2)).shape, bn.num_batches_tracked.item()
        (ember.Size([4, 3, 2]), 1)
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ArgumentError(f"SyncBatchNorm: expected at least 2D input (got {input.ndim}D "
                                f"input of shape {tuple(input.shape)})")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        across = _REDUCER[0](self.process_group) if _REDUCER and self.training and \
            self._uses_batch_statistics() else None
        if across is None:
            return super().forward(input)
        if input.shape[1] != self.num_features:
            raise ArgumentError(f"SyncBatchNorm: expected {self.num_features} channels (dim 1), "
                                f"got input of shape {tuple(input.shape)}")
        factor = self._momentum_factor()
        # statistics in float32 at least; their all-reduces in float64 (exact element counts,
        # and sums that do not depend on how the batch is split)
        acc = input.dtype if input.dtype in (ember.float32, ember.float64) else ember.float32
        x, dims = input.to(acc), (0, *range(2, input.ndim))
        local_count = ember.full((1,), input.numel() // max(input.shape[1], 1),
                                 dtype=ember.float64, device=input.device)
        totals = across(ember.cat([x.sum(dims).to(ember.float64), local_count]))
        count = int(totals[-1].item())
        if count <= 1:
            raise ArgumentError(f"SyncBatchNorm: expected more than 1 value per channel over all "
                                f"ranks when training, got {count} (local input shape "
                                f"{tuple(input.shape)})")
        mean = (totals[:-1] / count).to(acc)
        centered = x - _per_channel(mean, input.ndim)
        var = (across((centered * centered).sum(dims).to(ember.float64)) / count).to(acc)
        if self.track_running_stats:
            with ember.no_grad():
                _update_batch_stats(self.running_mean, self.running_var,
                                    mean.detach().to(self.running_mean.dtype),
                                    var.detach().to(self.running_var.dtype), count, factor)
        out = centered * _per_channel((var + self.eps).rsqrt(), input.ndim)
        out = _affine(out, None if self.weight is None else _per_channel(self.weight,
                                                                         input.ndim),
                      None if self.bias is None else _per_channel(self.bias, input.ndim))
        return out.to(input.dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm1d/2d/3d`` in it replaced by a
        :class:`SyncBatchNorm` sharing its parameters and buffers (a batch norm itself
        gives a new layer), as PyTorch's.

        Example:
            >>> net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
            >>> type(nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
            'SyncBatchNorm'
        """
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group,
                            bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted._buffers[name] = module._buffers[name]
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
