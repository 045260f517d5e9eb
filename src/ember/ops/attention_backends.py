"""Which implementation ``scaled_dot_product_attention`` may use: :class:`SDPBackend` and the
:func:`sdpa_kernel` context manager (``torch.nn.attention``'s; exported there by
:mod:`ember.nn.attention`).

Ember has two implementations on every device: ``MATH``, the composite of matmul and softmax
(any inputs), and ``FLASH_ATTENTION``, the blockwise kernel of
:mod:`ember.ops.attention_blockwise` (online softmax over blocks, memory linear in the length;
masks and causal masking, but no dropout and no mask that needs a gradient), as PyTorch's CPU
backends are. The other members name PyTorch's CUDA kernels, which never run here. With both
allowed, the blockwise kernel is taken for large score matrices only, unless ``set_priority``
puts one first.

Example:
    >>> from ember.nn.attention import SDPBackend, sdpa_kernel
    >>> q = ember.randn(1, 2, 4, 8)
    >>> with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    ...     F.scaled_dot_product_attention(q, q, q).shape
    ember.Size([1, 2, 4, 8])
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from enum import Enum


class SDPBackend(Enum):
    """The implementations of scaled dot-product attention (PyTorch's members and values);
    Ember runs ``MATH`` and ``FLASH_ATTENTION``."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __hash__ = object.__hash__  # (members are singletons; a compiled call's key hashes them)


_EVERY = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
          SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH, SDPBackend.OVERRIDEABLE)


class _Allowed:
    """The backends ``scaled_dot_product_attention`` may use now, and whether their order is
    a preference (``set_priority``). Global, as PyTorch's setting is."""

    backends: tuple[SDPBackend, ...] = _EVERY
    ordered = False


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | list[SDPBackend],
                set_priority: bool = False) -> Iterator[dict]:
    """Within the block, ``scaled_dot_product_attention`` uses only ``backends``; with
    ``set_priority`` the first of them that can run the inputs is used. When none can, the
    call raises a ``RuntimeError`` that says why each was ruled out.

    Example:
        >>> q = ember.randn(1, 2, 4, 8)
        >>> with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        ...     F.scaled_dot_product_attention(q, q, q)
        Traceback (most recent call last):
        ...
        RuntimeError: scaled_dot_product_attention: No viable backend ... not in Ember...
    """
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, list) or not all(isinstance(b, SDPBackend) for b in backends):
        raise TypeError("sdpa_kernel: backends must be an SDPBackend or a list of SDPBackend, "
                        f"got {backends!r}")
    saved = _Allowed.backends, _Allowed.ordered
    _Allowed.backends, _Allowed.ordered = tuple(dict.fromkeys(backends)), set_priority
    try:
        yield {}
    finally:
        _Allowed.backends, _Allowed.ordered = saved


def allowed_backends() -> tuple[tuple[SDPBackend, ...], bool]:
    """The current setting: the allowed backends and whether their order is a priority (part
    of a compiled function's cache key, as it decides what gets traced)."""
    return _Allowed.backends, _Allowed.ordered


def set_backend_enabled(backend: SDPBackend, enabled: bool) -> None:
    """Allows or forbids one backend from now on, the others unchanged (what
    ``ember.backends.cuda.enable_flash_sdp`` … do, as PyTorch's global switches). An enabled
    backend takes its place in the default order, or the last place in a priority list."""
    allowed = _Allowed.backends
    if not enabled:
        _Allowed.backends = tuple(b for b in allowed if b is not backend)
    elif backend not in allowed:
        _Allowed.backends = allowed + (backend,) if _Allowed.ordered else \
            tuple(b for b in (*_EVERY, SDPBackend.ERROR) if b in allowed or b is backend)


def choose_backend(blockwise_problem: str | None, large: bool) -> SDPBackend:
    """The implementation to run: ``MATH`` or ``FLASH_ATTENTION``.

    Args:
        blockwise_problem: why the blockwise kernel cannot run these inputs, or None if it can.
        large: whether the score matrices are big enough for the blockwise kernel to pay.
    """
    allowed = _Allowed.backends
    flash_ok = SDPBackend.FLASH_ATTENTION in allowed and blockwise_problem is None
    if SDPBackend.MATH in allowed and flash_ok:
        if _Allowed.ordered:
            return allowed[min(allowed.index(SDPBackend.MATH),
                               allowed.index(SDPBackend.FLASH_ATTENTION))]
        return SDPBackend.FLASH_ATTENTION if large else SDPBackend.MATH
    if flash_ok:
        return SDPBackend.FLASH_ATTENTION
    if SDPBackend.MATH in allowed:
        return SDPBackend.MATH
    reasons = [f"{b.name}: " + ("PyTorch's CUDA kernel, not in Ember"
                                if b is not SDPBackend.FLASH_ATTENTION else
                                f"Ember's blockwise kernel cannot run these inputs "
                                f"({blockwise_problem})")
               for b in allowed if b is not SDPBackend.ERROR]
    raise RuntimeError(
        "scaled_dot_product_attention: No viable backend for scaled_dot_product_attention "
        f"was found among the allowed {[b.name for b in allowed]}"
        + (f" ({'; '.join(reasons)})" if reasons else "")
        + ". Hint: allow SDPBackend.MATH, which runs any inputs, in sdpa_kernel"
    )
