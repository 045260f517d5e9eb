"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of mixed precision. Each warns as
torch's does, names the ``ember.amp`` form to use, and, with no CUDA device, is disabled as
torch's is without one (its autocast casts nothing; its GradScaler scales nothing).

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     scaler = ember.cuda.amp.GradScaler()
    >>> scaler.is_enabled()
    False
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ember import amp
from ember.dtypes import DType, float16

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


def _deprecated(name: str, use: str) -> None:
    warnings.warn(f"`ember.cuda.amp.{name}(args...)` is deprecated, as torch's is. Please use "
                  f"`{use}` instead.", FutureWarning, stacklevel=3)


def _no_device(what: str) -> None:
    warnings.warn(f"ember.cuda.amp.{what} is enabled, but CUDA is not available (Ember "
                  "computes on the CPU). Disabling.", UserWarning, stacklevel=3)


class autocast(amp.autocast):
    """Deprecated ``torch.cuda.amp.autocast``: ``ember.autocast("cuda", ...)``, disabled
    (with a warning) since there is no CUDA device. Use ``ember.autocast("cpu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: DType = float16,
                 cache_enabled: bool = True) -> None:
        _deprecated("autocast", "ember.amp.autocast('cuda', args...)")
        if enabled:
            _no_device("autocast")
        super().__init__("cuda", dtype, enabled=False, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """Deprecated ``torch.cuda.amp.GradScaler``: disabled (with a warning) since there is no
    CUDA device, so every method passes through. Use ``ember.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        _deprecated("GradScaler", "ember.amp.GradScaler('cuda', args...)")
        if enabled:
            _no_device("GradScaler")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled=False)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: DType | None = None) -> Callable:
    """Deprecated ``torch.cuda.amp.custom_fwd``: ``ember.amp.custom_fwd(device_type="cuda")``."""
    _deprecated("custom_fwd", "ember.amp.custom_fwd(args..., device_type='cuda')")
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable | None = None) -> Callable:
    """Deprecated ``torch.cuda.amp.custom_bwd``: ``ember.amp.custom_bwd(device_type="cuda")``."""
    _deprecated("custom_bwd", "ember.amp.custom_bwd(args..., device_type='cuda')")
    return amp.custom_bwd(bwd, device_type="cuda")
