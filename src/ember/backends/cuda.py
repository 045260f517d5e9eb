"""``ember.backends.cuda``: ``torch.backends.cuda``'s build query, matmul switches and
attention switches. Ember has no CUDA backend (``is_built()`` is False).
``matmul.allow_tf32`` reads and sets :func:`ember.set_float32_matmul_precision` (True is
``"high"``, False ``"highest"``), as in PyTorch; the reduced-precision-reduction switches are
recorded and change no CPU result. The ``*_sdp`` switches allow or forbid the backends of
``scaled_dot_product_attention`` on every device, as in PyTorch (where they apply on the CPU
too) and as :func:`ember.nn.attention.sdpa_kernel` does for a block: ``math`` and ``flash``
are Ember's two implementations; ``mem_efficient`` and ``cudnn`` name CUDA kernels that never
run here.

Example:
    >>> ember.backends.cuda.is_built(), ember.backends.cuda.matmul.allow_tf32
    (False, False)
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from ember.backend import settings
from ember.ops.attention_backends import (
    SDPBackend,
    allowed_backends,
    sdpa_kernel,
    set_backend_enabled,
)

__all__ = ["cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp",
           "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built",
           "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled", "sdp_kernel"]


def is_built() -> bool:
    """Whether this build has CUDA support: False.

    Example:
        >>> ember.backends.cuda.is_built()
        False
    """
    return False


class _Matmul:
    """``ember.backends.cuda.matmul``: an unknown name raises, as PyTorch's does (a typo must
    not set nothing silently)."""

    _RECORDED = ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        for name in self._RECORDED:
            object.__setattr__(self, name, True)

    @property
    def allow_tf32(self) -> bool:
        return settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        settings.set_float32_matmul_precision("high" if value else "highest")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            object.__setattr__(self, name, value)
        elif name in self._RECORDED:
            object.__setattr__(self, name, bool(value))
        else:
            raise AttributeError(f"ember.backends.cuda.matmul: Unknown attribute {name}; it "
                                 "has allow_tf32, " + ", ".join(self._RECORDED))

    def __getattr__(self, name: str) -> Any:  # (only for names not found)
        raise AttributeError(f"ember.backends.cuda.matmul: Unknown attribute {name}; it has "
                             "allow_tf32, " + ", ".join(self._RECORDED))


matmul = _Matmul()


def _enabled(backend: SDPBackend) -> bool:
    return backend in allowed_backends()[0]


def _switch(kind: str, backend: SDPBackend, enabled: bool) -> None:
    if not isinstance(enabled, bool):  # (as PyTorch, which takes no 0 or 1 either)
        raise RuntimeError(f"ember.backends.cuda.enable_{kind}_sdp expects a bool, got "
                           f"{type(enabled).__name__} {enabled!r}")
    set_backend_enabled(backend, enabled)


def flash_sdp_enabled() -> bool:
    """Whether attention may use the blockwise (flash) kernel.

    Example:
        >>> ember.backends.cuda.flash_sdp_enabled()
        True
    """
    return _enabled(SDPBackend.FLASH_ATTENTION)


def enable_flash_sdp(enabled: bool) -> None:
    """Allows or forbids the blockwise (flash) attention kernel from now on.

    Example:
        >>> ember.backends.cuda.enable_flash_sdp(False)
        >>> ember.backends.cuda.flash_sdp_enabled()
        False
        >>> ember.backends.cuda.enable_flash_sdp(True)
    """
    _switch("flash", SDPBackend.FLASH_ATTENTION, enabled)


def math_sdp_enabled() -> bool:
    """Whether attention may use the math path (matmul and softmax).

    Example:
        >>> ember.backends.cuda.math_sdp_enabled()
        True
    """
    return _enabled(SDPBackend.MATH)


def enable_math_sdp(enabled: bool) -> None:
    """Allows or forbids the math attention path from now on."""
    _switch("math", SDPBackend.MATH, enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether PyTorch's memory-efficient CUDA kernel is allowed (it never runs in Ember)."""
    return _enabled(SDPBackend.EFFICIENT_ATTENTION)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allows or forbids PyTorch's memory-efficient CUDA kernel (it never runs in Ember)."""
    _switch("mem_efficient", SDPBackend.EFFICIENT_ATTENTION, enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether PyTorch's cuDNN attention kernel is allowed (it never runs in Ember)."""
    return _enabled(SDPBackend.CUDNN_ATTENTION)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allows or forbids PyTorch's cuDNN attention kernel (it never runs in Ember)."""
    _switch("cudnn", SDPBackend.CUDNN_ATTENTION, enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[dict]:
    """PyTorch's deprecated switch block: :func:`ember.nn.attention.sdpa_kernel` with the
    backends whose ``enable_*`` is True; warns (FutureWarning) as PyTorch's does.

    Example:
        >>> import warnings
        >>> q = ember.randn(1, 2, 4, 8)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.backends.cuda.sdp_kernel(enable_flash=False):
        ...         ember.nn.functional.scaled_dot_product_attention(q, q, q).shape
        ember.Size([1, 2, 4, 8])
    """
    warnings.warn("ember.backends.cuda.sdp_kernel() is deprecated, as torch's: use "
                  "ember.nn.attention.sdpa_kernel(backends) instead", FutureWarning, stacklevel=3)
    chosen = [backend for backend, on in ((SDPBackend.FLASH_ATTENTION, enable_flash),
                                          (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                                          (SDPBackend.MATH, enable_math),
                                          (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if on]
    with sdpa_kernel(chosen) as context:
        yield context
