"""``ember.cpu.amp``: PyTorch's deprecated CPU spellings of mixed precision. Each warns as
torch's does and is ``ember.amp``'s CPU form.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     with ember.cpu.amp.autocast():
    ...         y = ember.nn.Linear(2, 2)(ember.ones(1, 2))
    >>> y.dtype
    ember.bfloat16
"""

from __future__ import annotations

import warnings

from ember import amp
from ember.dtypes import DType, bfloat16

__all__ = ["GradScaler", "autocast"]


def _deprecated(name: str, use: str) -> None:
    warnings.warn(f"`ember.cpu.amp.{name}(args...)` is deprecated, as torch's is. Please use "
                  f"`{use}` instead.", FutureWarning, stacklevel=3)


class autocast(amp.autocast):  # noqa: N801 - PyTorch's name
    """Deprecated ``torch.cpu.amp.autocast``: ``ember.autocast("cpu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: DType = bfloat16,
                 cache_enabled: bool = True) -> None:
        _deprecated("autocast", "ember.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """Deprecated ``torch.cpu.amp.GradScaler``: ``ember.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        _deprecated("GradScaler", "ember.amp.GradScaler('cpu', args...)")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled=enabled)
