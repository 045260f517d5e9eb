"""The ctx of a fake rule (``torch.library.get_ctx``): ``new_dynamic_size()`` stands for a
number known only once the op runs, such as an ``int`` the op returns. Ember's graphs have
static shapes, so a fake rule may return such a number but not size a tensor with it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ember.errors import OpError
from ember.tensor import Tensor

_CURRENT = threading.local()


class DynamicSize(int):
    """An ``int`` standing for a value the op computes from data (its value here: ``min``)."""


class FakeImplCtx:
    """What :func:`get_ctx` returns inside a fake rule (PyTorch's ``FakeImplCtx``)."""

    def __init__(self, qualname: str, shift: int = 0) -> None:
        self.qualname = qualname
        self.made: list[DynamicSize] = []
        self.shift = shift  # (added to each size's min, within its max: see call_fake)

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> int:  # noqa: A002
        """A data-dependent number for the fake rule to return as the op's ``int`` output
        (Ember cannot size a tensor with it: its graphs have static shapes)."""
        size = DynamicSize(min if max is not None and min + self.shift > max else
                           min + self.shift)
        self.made.append(size)
        return size

    create_unbacked_symint = new_dynamic_size  # (PyTorch's older name)


def get_ctx() -> FakeImplCtx | None:
    """The ctx of the fake rule now running, or None outside one (``torch.library.get_ctx``).

    Example:
        >>> @ember.library.custom_op("mylib::count_positive", mutates_args=())
        ... def count_positive(x: ember.Tensor) -> int:
        ...     return int((x > 0).sum())
        >>> @count_positive.register_fake
        ... def _(x):
        ...     return ember.library.get_ctx().new_dynamic_size()
        >>> count_positive(ember.tensor([1.0, -2.0, 3.0]))
        2
    """
    return getattr(_CURRENT, "ctx", None)


@contextmanager
def fake_context(qualname: str, shift: int = 0) -> Iterator[FakeImplCtx]:
    """Makes :func:`get_ctx` return a new ctx while a fake rule runs."""
    saved = getattr(_CURRENT, "ctx", None)
    _CURRENT.ctx = ctx = FakeImplCtx(qualname, shift)
    try:
        yield ctx
    finally:
        _CURRENT.ctx = saved


def call_fake(qualname: str, rule: Callable, args: tuple, kwargs: dict) -> Any:
    """What the fake rule ``rule`` returns, under :func:`get_ctx`. Refuses a rule that sizes
    a tensor with a ``new_dynamic_size()``: one it made and did not return as a number, or
    one it returned too (torch's nonzero pattern), seen as output shapes that change when the
    rule runs again with its sizes one larger."""
    with fake_context(qualname) as ctx:
        out = rule(*args, **kwargs)
    items = out if isinstance(out, (tuple, list)) else (out,)
    if any(all(item is not size for item in items) for size in ctx.made):
        raise _dynamic_shape(qualname)
    if ctx.made:
        with fake_context(qualname, shift=1):
            again = rule(*args, **kwargs)
        if _shapes(again) != _shapes(out):
            raise _dynamic_shape(qualname)
    return out


def _shapes(out: Any) -> Any:
    """The shapes of the tensors a fake rule returned (lists and tuples kept)."""
    if isinstance(out, (tuple, list)):
        return tuple(_shapes(o) for o in out)
    return tuple(out.shape) if isinstance(out, Tensor) else None


def _dynamic_shape(qualname: str) -> OpError:
    return OpError(f"{qualname}: the fake impl used ctx.new_dynamic_size() for a size; "
                   "Ember's graphs (ember.jit, opcheck, the meta device) have static "
                   "shapes, so an output whose shape depends on the data is not supported. "
                   "Hint: return a fixed-size tensor (padded, with a count), or call the "
                   "op outside the compiled function")
