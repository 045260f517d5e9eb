"""``ember.backends.cuda``: ``torch.backends.cuda``'s build query and matmul switches. Ember
has no CUDA backend (``is_built()`` is False). ``matmul.allow_tf32`` reads and sets
:func:`ember.set_float32_matmul_precision` (True is ``"high"``, False ``"highest"``), as in
PyTorch; the reduced-precision-reduction switches are recorded. None changes a CPU result.

Example:
    >>> ember.backends.cuda.is_built(), ember.backends.cuda.matmul.allow_tf32
    (False, False)
"""

from __future__ import annotations

from typing import Any

from ember.backend import settings

__all__ = ["is_built", "matmul"]


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
