"""What a custom op returns, as its primitive's outputs: every tensor (a ``list[Tensor]``'s
items one by one) and every number (``int``, ``float``, ``bool``: a 0-d array) is one output;
:func:`flatten` makes them, :func:`structure` gives the user the op's return value back.

A list's length is known only once the op runs (or its fake rule does), so each call's list
lengths (``lens``) pick the primitive, as PyTorch's ``Tensor[]`` outputs are sized per call.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ember.dtypes import to_dtype
from ember.errors import EmberError, OpError
from ember.ops.primitive import TensorSpec
from ember.tensor import Tensor, _wrap

#: a number's schema type -> (the values it takes, the Python type the user gets)
_NUMBERS = {"SymInt": (numbers.Integral, int), "float": (numbers.Real, float),
            "bool": ((bool, np.bool_), bool), "Scalar": ((bool, numbers.Real), None)}


#: the returned values whose number of tensors a call decides: a list, an optional tensor (0/1)
SIZED = ("Tensor[]", "Tensor?")


def count(returns: tuple[str, ...], lens: tuple[int, ...]) -> int:
    """How many primitive outputs the returns ``returns`` make with list lengths ``lens``."""
    return sum(1 for r in returns if r not in SIZED) + sum(lens)


def flatten(qualname: str, text: str, returns: tuple[str, ...], tupled: bool, out: Any,
            what: str, dev: Any) -> tuple[list, tuple[int, ...]]:
    """The outputs of a return value ``out`` (the ``what``: implementation or fake impl) and
    its list lengths: tensors (TensorSpecs from a fake rule, ``dev`` None), checked against
    the schema ``text``."""
    if not returns:
        if out is not None:
            raise OpError(f"{qualname}: the {what} returned {describe(out)}, but the schema "
                          f"{text} says it returns nothing")
        return [], ()
    if tupled and (not isinstance(out, (tuple, list)) or len(out) != len(returns)):
        raise OpError(f"{qualname}: the {what} must return a tuple of {len(returns)} values "
                      f"(schema {text}), got {describe(out)}")
    flat, lens = [], []
    for type_, item in zip(returns, out if tupled else (out,)):
        if type_ == "Tensor[]":
            if not isinstance(item, (list, tuple)):
                raise OpError(f"{qualname}: the {what} returned {describe(item)} where the "
                              f"schema {text} has a Tensor[]; expected a list of Tensors")
            lens.append(len(item))
            flat.extend(_tensor(qualname, what, t, len(flat), dev) for t in item)
        elif type_ == "Tensor?":
            lens.append(0 if item is None else 1)
            if item is not None:
                flat.append(_tensor(qualname, what, item, len(flat), dev))
        elif type_ == "Tensor":
            flat.append(_tensor(qualname, what, item, len(flat), dev))
        else:
            flat.append(_number(qualname, what, type_, item, dev))
    return flat, tuple(lens)


def _tensor(qualname: str, what: str, o: Any, i: int, dev: Any) -> Any:
    if not isinstance(o, Tensor):
        raise OpError(f"{qualname}: the {what} returned {describe(o)} as output {i}, expected "
                      "an ember Tensor. Hint: wrap NumPy results with ember.from_numpy(...)")
    if dev is None:
        return TensorSpec(tuple(o.shape), o.dtype)
    if o._device != dev:
        raise OpError(f"{qualname}: the {what} returned output {i} on {o.device}, its inputs "
                      f"are on {dev}")
    return o


def _number(qualname: str, what: str, type_: str, v: Any, dev: Any) -> Any:
    """A returned number as a 0-d tensor (its spec for a fake rule, which may return any
    number or None: the value is not known before the op runs)."""
    accepted, _ = _NUMBERS[type_]
    if isinstance(v, Tensor) and v.numel() == 1 and dev is not None:
        v = v.item()
    if dev is None and v is None:
        v = {"SymInt": 0, "bool": False}.get(type_, 0.0)
    if not isinstance(v, accepted) or (type_ in ("SymInt", "float") and
                                       isinstance(v, (bool, np.bool_))):
        raise OpError(f"{qualname}: the {what} returned {describe(v)} where the schema has "
                      f"{type_}")
    name = {"SymInt": "int64", "float": "float64", "bool": "bool"}.get(type_) or \
        ("bool" if isinstance(v, (bool, np.bool_)) else
         "int64" if isinstance(v, numbers.Integral) else "float64")
    if dev is None:
        return TensorSpec((), to_dtype(name))
    return _wrap(dev.xp.asarray(v, dtype=name), dev)


def structure(qualname: str, returns: tuple[str, ...], tupled: bool, flat: Any,
              lens: tuple[int, ...], numbers_as: str = "python") -> Any:
    """The op's return value from its outputs ``flat``: lists rebuilt, numbers as Python
    numbers (``numbers_as="python"``), as None (``"none"``: a backward's gradient slots) or as
    they are (``"tensor"``)."""
    items, it, sizes = [], iter(flat), iter(lens)
    for type_ in returns:
        if type_ == "Tensor[]":
            items.append([next(it) for _ in range(next(sizes))])
        elif type_ == "Tensor?":
            items.append(next(it) if next(sizes) else None)
        elif type_ == "Tensor" or numbers_as == "tensor":
            items.append(next(it))
        else:
            v = next(it)
            items.append(None if numbers_as == "none" else _python(type_, v))
    if not returns:
        return None
    return tuple(items) if tupled else items[0]


def _python(type_: str, v: Tensor) -> Any:
    """A returned number as its Python type; under a transform that cannot read it (ember.jit
    tracing: its value is known only when the op runs) the 0-d tensor itself, which computes
    on as PyTorch's SymInt does and raises the transform's error where a Python number is
    needed (``range(n)``, ``if n:``)."""
    try:
        value = v.item()
    except EmberError:
        return v
    python = _NUMBERS[type_][1]
    return value if python is None else python(value)


def describe(x: Any) -> str:
    """A value's type for a message, with its length for a list or tuple."""
    return f"a {type(x).__name__} of {len(x)}" if isinstance(x, (tuple, list)) else \
        type(x).__name__
