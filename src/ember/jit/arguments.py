"""A compiled call's arguments as the cache key and the messages see them: each leaf's name
(its parameter's name and its place inside that argument), and a value's part of the key.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ember.func.pytree import tree_flatten, tree_paths
from ember.ops.overrides import TENSOR_LIKE
from ember.tensor import Tensor


def parameter_names(fn: Callable, count: int) -> list[str]:
    """The names of ``fn``'s first ``count`` positional parameters (a module's ``forward``'s),
    ``#i`` where it has none (``*args``)."""
    try:
        params = [p.name for p in inspect.signature(getattr(fn, "forward", fn)).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # (a callable without a signature)
        params = []
    return [params[i] if i < len(params) else f"#{i}" for i in range(count)]


def argument_names(fn: Callable, args: tuple, kwargs: dict) -> list[str]:
    """A name for each leaf of a call's ``(args, kwargs)``, in ``tree_flatten``'s order: its
    parameter's name and its place inside that argument.

    Example:
        >>> argument_names(lambda x, batch: x, (t, (a, b)), {"flag": True})
        ['x', 'batch[0]', 'batch[1]', 'flag']
    """
    names = parameter_names(fn, len(args))
    return [name + path for name, a in zip(names, args) for path in tree_paths(a)] + \
        [key + path for key, v in kwargs.items() for path in tree_paths(v)]


def hashable(value: Any, name: Callable[[], str]) -> Any:
    """``value`` if it can be part of the cache key (an unhashable object by its identity);
    else an error naming the argument (``name()``, made only then). A tensor reaches here
    only as a static argument, which it cannot be: the graph reads its values at run time."""
    if type(value) in TENSOR_LIKE:
        raise TypeError(f"ember.jit: argument {name()} is a {type(value).__name__}, which "
                        "compiled functions do not take (nor trace its values). Hint: call "
                        "the function without ember.compile")
    if isinstance(value, Tensor):
        raise TypeError(f"ember.jit: static argument {name()} is a tensor: a tensor is an input "
                        "of the graph, traced by shape and dtype, never by its values. Hint: "
                        "pass the values as Python numbers (tuple(t.tolist())) to make them "
                        "static, or leave it out of static_argnums")
    try:
        hash(value)
    except TypeError:
        if hasattr(value, "__dict__"):  # an object (a dataclass's self): by identity
            return ("object", id(value))
        raise TypeError(f"ember.jit: argument {name()} of type {type(value).__name__} is not "
                        "hashable, so it cannot be part of the cache key. Hint: pass it as a "
                        "tensor, or as a tuple instead of a list") from None
    return value


def flatten_arguments(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """``tree_flatten((args, kwargs))``, its commonest case known: tensors alone (leaves of
    every pytree), passed by position (4.5 → 0.5 µs a call)."""
    if not kwargs and all(type(a) is Tensor for a in args):
        spec = _TENSORS_SPECS.get(len(args))
        if spec is None:
            spec = _TENSORS_SPECS[len(args)] = tree_flatten((args, kwargs))[1]
        return list(args), spec
    return tree_flatten((args, kwargs))


_TENSORS_SPECS: dict[int, Any] = {}  # per count of positional tensors: their pytree spec
