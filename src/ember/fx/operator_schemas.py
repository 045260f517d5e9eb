"""Argument normalization of a call against its target's signature, as
``torch.fx.operator_schemas``: what :meth:`ember.fx.Node.normalized_arguments` returns."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["ArgsKwargsPair", "normalize_function", "normalize_module"]

_SUPPORTED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class ArgsKwargsPair(NamedTuple):
    """The arguments of a call, normalized: positional ``args`` and keyword ``kwargs``."""

    args: tuple
    kwargs: dict[str, Any]


def normalize_function(target: Callable, args: tuple, kwargs: dict | None = None,
                       arg_types: tuple | None = None, kwarg_types: dict | None = None,
                       normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """``target(*args, **kwargs)`` matched to ``target``'s signature with the defaults filled
    in: the positional arguments stay positional (all by keyword with
    ``normalize_to_only_use_kwargs``), the others come by keyword in the signature's order.
    None when the signature is unknown or has positional-only or ``*args``/``**kwargs``
    parameters (``operator.add``). ``arg_types``/``kwarg_types`` are accepted for PyTorch
    compatibility: Ember's functions have one signature each, never overloads to choose.

    Example:
        >>> normalize_function(ember.nn.functional.relu, ("x",))
        ArgsKwargsPair(args=('x',), kwargs={'inplace': False})
    """
    try:
        sig = inspect.signature(inspect.unwrap(target))
    except (TypeError, ValueError):
        return None
    return _normalized(sig, args, kwargs or {}, normalize_to_only_use_kwargs)


def normalize_module(root: Any, target: str, args: tuple, kwargs: dict | None = None,
                     normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """The call of ``root``'s submodule ``target`` normalized against its ``forward`` (see
    :func:`normalize_function`), for ``ember.nn``'s own module classes (None for others, as
    PyTorch normalizes only ``torch.nn``'s).

    Example:
        >>> normalize_module(ember.nn.Sequential(ember.nn.ReLU()), "0", ("x",), {}, True)
        ArgsKwargsPair(args=(), kwargs={'input': 'x'})
    """
    import ember.nn

    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"normalized_arguments: the root module has no submodule "
                           f"{target!r} (the node's target)") from e
    if getattr(ember.nn, type(submod).__name__, None) is not type(submod):
        return None
    sig = inspect.signature(inspect.unwrap(submod.forward))
    return _normalized(sig, args, kwargs or {}, normalize_to_only_use_kwargs)


def _normalized(sig: inspect.Signature, args: tuple, kwargs: dict,
                only_kwargs: bool) -> ArgsKwargsPair | None:
    if any(p.kind not in _SUPPORTED for p in sig.parameters.values()):
        return None
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    new_args, new_kwargs = [], {}
    for i, name in enumerate(sig.parameters):
        if not only_kwargs and i < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)
