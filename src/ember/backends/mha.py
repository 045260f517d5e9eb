"""``ember.backends.mha``: PyTorch's switch of ``MultiheadAttention``'s and
``TransformerEncoderLayer``'s fused inference paths. Ember computes the same way on every
path; the switch decides where it follows those paths' rules (a mask given with
``is_causal=True`` is read there, the causal mask elsewhere).

Example:
    >>> ember.backends.mha.get_fastpath_enabled()
    True
    >>> ember.backends.mha.set_fastpath_enabled(False)
    >>> ember.backends.mha.get_fastpath_enabled()
    False
    >>> ember.backends.mha.set_fastpath_enabled(True)
"""

from __future__ import annotations

_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fused inference paths may run (True unless switched off).

    Example:
        >>> ember.backends.mha.get_fastpath_enabled()
        True
    """
    return _fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Switches the fused inference paths on or off (the value is kept as given, as torch's).

    Example:
        >>> ember.backends.mha.set_fastpath_enabled(True)
    """
    global _fastpath_enabled
    _fastpath_enabled = value
