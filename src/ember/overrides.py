"""``ember.overrides``: the explicit side of PyTorch's ``__torch_function__`` protocol, for code
that guards a function of its own with it::

    def scaled(x, s):
        if has_torch_function_unary(x):
            return handle_torch_function(scaled, (x,), x, s)
        return x * s

A class defining ``__torch_function__(cls, func, types, args=(), kwargs=None)`` takes over such a
call as in PyTorch. Ember's own ops do not consult ``__torch_function__``: tensor-like classes
take them over by registering with :mod:`ember.ops.overrides` (as nested tensors and DTensors
do), so ``has_torch_function`` is True only for objects that define the method, never for an
``ember.Tensor`` or a subclass that does not.

Example:
    >>> from ember.overrides import has_torch_function, is_tensor_like
    >>> has_torch_function((ember.ones(2),)), is_tensor_like(ember.ones(2))
    (False, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ember.ops.overrides import TENSOR_LIKE
from ember.tensor import Tensor

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function"]


def _overrides(obj: Any) -> bool:
    return hasattr(type(obj), "__torch_function__")


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of ``relevant_args`` defines ``__torch_function__``."""
    return any(_overrides(a) for a in relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    """:func:`has_torch_function` of one argument."""
    return _overrides(obj)


def has_torch_function_variadic(*args: Any) -> bool:
    """:func:`has_torch_function` of the arguments."""
    return any(_overrides(a) for a in args)


def _overloaded(relevant_args: Iterable[Any]) -> list[Any]:
    """The arguments whose class defines ``__torch_function__``, one per class, a subclass
    before its base classes and otherwise in the order given (PyTorch's order)."""
    found: list[Any] = []
    for arg in relevant_args:
        if not _overrides(arg) or any(type(arg) is type(seen) for seen in found):
            continue
        at = next((i for i, seen in enumerate(found) if issubclass(type(arg), type(seen))),
                  len(found))
        found.insert(at, arg)
    return found


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    """``public_api(*args, **kwargs)`` computed by the first ``__torch_function__`` among
    ``relevant_args`` that does not return ``NotImplemented``; a ``TypeError`` if all do.

    Example:
        >>> class Logged:
        ...     @classmethod
        ...     def __torch_function__(cls, func, types, args=(), kwargs=None):
        ...         return f"{func.__name__} of {len(args)} arguments"
        >>> def f(x, y):
        ...     return handle_torch_function(f, (x, y), x, y)
        >>> f(Logged(), 1)
        'f of 2 arguments'
    """
    overloaded = _overloaded(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__qualname__", repr(public_api))
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {list(types)}")


def is_tensor_like(inp: Any) -> bool:
    """Whether ``inp`` is a tensor, a registered tensor-like object (nested tensor, DTensor)
    or defines ``__torch_function__``."""
    return isinstance(inp, Tensor) or type(inp) in TENSOR_LIKE or _overrides(inp)


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a method of ``ember.Tensor`` or a property's getter
    (``Tensor.shape.__get__``), as ``__torch_function__`` implementations ask. A method
    replaced in place (``Tensor.add = f``) is seen by the name it is defined under; one
    stored under another name is seen once a member is added or removed.

    Example:
        >>> is_tensor_method_or_property(ember.Tensor.add), is_tensor_method_or_property(ember.add)
        (True, False)
    """
    name = getattr(func, "__name__", None)
    if name == "__get__":
        return True
    classes = Tensor.__mro__[:-1]
    where = _tensor_members(sum(len(vars(cls)) for cls in classes)).get(id(func))
    if where is not None and vars(where[0]).get(where[1]) is func:
        return True  # (checked: the table's entry may have been replaced since)
    if isinstance(name, str):  # (a method replaced in place under its own name)
        for cls in classes:
            if vars(cls).get(name) is func:
                return True
    return False


@functools.lru_cache(maxsize=1)
def _tensor_members(count: int) -> dict[int, tuple[type, str]]:
    """Where each attribute of ``Tensor`` and its bases is, ``id -> (class, name)``, built
    again when ``count`` (their number) changes, as a method is registered (PyTorch's caches
    its method set once)."""
    del count
    return {id(value): (cls, name) for cls in Tensor.__mro__[:-1]
            for name, value in vars(cls).items()}


def wrap_torch_function(dispatcher: Callable[..., Iterable[Any]]) -> Callable[[Callable], Callable]:
    """A decorator making a function honour ``__torch_function__``: ``dispatcher`` takes the
    function's arguments and returns the relevant ones; if any overrides, the call goes to
    :func:`handle_torch_function` with the decorated function.

    Example:
        >>> @wrap_torch_function(lambda x, s=1: (x,))
        ... def scaled(x, s=1):
        ...     return x * s
        >>> scaled(ember.ones(2), 3)
        tensor([3., 3.])
    """
    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = tuple(dispatcher(*args, **kwargs))
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorate
