"""``check_sparse_tensor_invariants``: whether the sparse constructors check the full
invariants of what they are given (sorted, distinct plain indices of each compressed row),
as PyTorch's flag. Ember checks indices against the size always (an index out of bounds
never makes a tensor); the flag adds the checks that cost a sort's worth of work."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from types import TracebackType
from typing import Any

from ember.errors import ArgumentError

__all__ = ["check_sparse_tensor_invariants", "checking"]

_ENABLED = [False]


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """Turns invariant checking in the sparse constructors on (``enable=True``) or off, as a
    context manager, a decorator, or globally with :meth:`enable`/:meth:`disable`; a
    constructor's ``check_invariants=`` argument overrides it.

    Example:
        >>> with ember.sparse.check_sparse_tensor_invariants():
        ...     ember.sparse.check_sparse_tensor_invariants.is_enabled()
        True
        >>> ember.sparse.check_sparse_tensor_invariants.is_enabled()
        False
    """

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved_state: bool | None = None

    @staticmethod
    def is_enabled() -> bool:
        """Whether the constructors check invariants by default."""
        return _ENABLED[0]

    @staticmethod
    def enable() -> None:
        """Checks invariants in every sparse constructor from now on."""
        _ENABLED[0] = True

    @staticmethod
    def disable() -> None:
        """Stops checking invariants by default."""
        _ENABLED[0] = False

    def __enter__(self) -> None:
        if self.saved_state is not None:
            raise ArgumentError("check_sparse_tensor_invariants: this context manager instance "
                                "is already active. Hint: use a new instance to nest one")
        self.saved_state = _ENABLED[0]
        _ENABLED[0] = self.state

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        _ENABLED[0], self.saved_state = bool(self.saved_state), None

    def __call__(self, fn: Callable) -> Callable:
        @wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            with type(self)(self.state):
                return fn(*args, **kwargs)
        return checked


def checking(check_invariants: bool | None) -> bool:
    """Whether a constructor given ``check_invariants`` checks them."""
    return _ENABLED[0] if check_invariants is None else bool(check_invariants)
