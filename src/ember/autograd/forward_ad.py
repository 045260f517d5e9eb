"""Forward-mode AD with dual tensors, as ``torch.autograd.forward_ad``.

Inside ``with dual_level():`` a tensor made by :func:`make_dual` carries a tangent; every op
on it computes the tangent of its result through the primitive's ``jvp`` rule, in the same
pass; :func:`unpack_dual` reads it back. Tangents are dropped when the level exits.
Levels are per thread, as every dispatch handler is: threads compute their own forward-mode
derivatives side by side (PyTorch keeps one set of levels for the process, so a second
thread cannot enter one while another is open, and a thread started inside a level sees it;
here it does not).

Example:
    >>> import ember.autograd.forward_ad as fwAD
    >>> x = ember.tensor([0.0, 1.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, ember.ones(2)).sin()
    ...     fwAD.unpack_dual(y).tangent        # cos(x)
    tensor([1.0000, 0.5403])
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from ember.autograd.forward import ForwardTrace, alias
from ember.dtypes import FLOAT
from ember.errors import DTypeError, GradError, ShapeError

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]


class _Levels(threading.local):
    """This thread's open levels, innermost last."""

    def __init__(self) -> None:
        self.stack: list[ForwardTrace] = []


_THREAD = _Levels()


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and its tangent (None if it has none)."""

    primal: Any
    tangent: Any


def enter_dual_level() -> int:
    """Starts a new forward-AD level and returns its index (prefer :class:`dual_level`)."""
    from ember.ops.primitive import push_handler

    trace = ForwardTrace()
    _THREAD.stack.append(trace)
    push_handler(trace)
    return len(_THREAD.stack) - 1


def exit_dual_level(*, level: int | None = None) -> None:
    """Ends the innermost forward-AD level (``level``, if given, must be it)."""
    from ember.ops.primitive import pop_handler

    levels = _THREAD.stack
    if not levels:
        raise GradError("exit_dual_level: no forward-AD level is active in this thread")
    if level is not None and level != len(levels) - 1:
        raise GradError(f"exit_dual_level: level {level} is not the innermost one "
                        f"({len(levels) - 1}); exit levels in the reverse order of entering")
    pop_handler(levels.pop())


class dual_level:
    """Context manager for a forward-AD level: dual tensors made inside it carry tangents
    until it exits. Levels nest; each is separate (tangents of one never mix with another's).

    Example:
        >>> with ember.autograd.forward_ad.dual_level():
        ...     y = fwAD.make_dual(x, v) * 3
        ...     fwAD.unpack_dual(y).tangent
        tensor([3., 3.])
    """

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: object) -> None:
        exit_dual_level(level=self.level)


def _trace(level: int | None, who: str) -> ForwardTrace:
    levels = _THREAD.stack
    if not levels:
        raise GradError(f"{who}: forward-mode AD needs an active level in this thread; use it "
                        "inside `with ember.autograd.forward_ad.dual_level():`")
    if level is None:
        return levels[-1]
    if not 0 <= level < len(levels):
        raise GradError(f"{who}: level {level} is not active (levels 0..{len(levels) - 1} are)")
    return levels[level]


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A new tensor with the value of ``tensor`` carrying ``tangent`` (same shape) at
    ``level`` (the innermost by default). ``tensor`` itself is unchanged.

    Example:
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(x, v)
        ...     fwAD.unpack_dual(d.exp()).tangent
        tensor([1.0000, 2.7183])
    """
    trace = _trace(level, "make_dual")
    if tensor.dtype.category < FLOAT:
        raise DTypeError(f"make_dual: expected a floating or complex primal, got "
                         f"{tensor.dtype.name}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise ShapeError(f"make_dual: the tangent has shape {tuple(tangent.shape)} but the "
                         f"primal has shape {tuple(tensor.shape)}; they must match")
    if tangent.dtype is not tensor.dtype:
        tangent = tangent.to(tensor.dtype)
    dual = alias(tensor)
    trace.set(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (the innermost by default); the
    tangent is None for a tensor without one (and outside any level)."""
    from ember.ops.primitive import apply, run_below
    from ember.ops.shape import Reshape

    if not _THREAD.stack:
        return UnpackedDualTensor(tensor, None)
    trace = _trace(level, "unpack_dual")
    tangent = trace.tangent(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    # the primal: the same value made below this level, so it carries no tangent here
    primal = run_below(trace, apply, Reshape, tensor, shape=tuple(tensor.shape))
    trace.set_none(primal)  # (a view of the dual's memory: it and its views would take its tangent)
    return UnpackedDualTensor(primal, tangent)
