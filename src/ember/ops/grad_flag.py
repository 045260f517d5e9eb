"""A factory's ``requires_grad=`` argument, read as PyTorch's factories read it."""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentTypeError


def grad_flag(requires_grad: Any) -> bool:
    """``requires_grad`` as a bool: None reads False, anything else but a bool is refused (1
    was kept: ``x.requires_grad`` was 1).

    Example:
        >>> grad_flag(None)
        False
    """
    if requires_grad is True or requires_grad is False:
        return requires_grad
    if requires_grad is not None:
        raise ArgumentTypeError(f"requires_grad must be a bool, got {requires_grad!r}")
    return False
