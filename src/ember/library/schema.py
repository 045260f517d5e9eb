"""Operator schemas from type hints: :func:`infer_schema` (PyTorch's schema strings) and the
parsed :class:`Param` list a custom op binds its calls with."""

from __future__ import annotations

import ast
import collections.abc
import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentError, EmberError
from ember.tensor import Tensor

#: a parameter's kind: how a call's value travels (tensors are the primitive's inputs)
TENSOR, OPTIONAL_TENSOR, TENSOR_LIST, VALUE = "tensor", "optional tensor", "tensor list", "value"
OPTIONAL_TENSOR_LIST = "optional tensor list"  # (Tensor?[]: a list whose items may be None)

_SCALARS = {int: "SymInt", float: "float", bool: "bool", str: "str", DType: "ScalarType"}
_NUMBER = int | float | bool  # (equal, as dict keys, to the typing.Union/Optional forms)


def _seqs(item: Any) -> list:
    return [typing.Sequence[item], typing.List[item], collections.abc.Sequence[item],  # noqa: UP006
            list[item]]


def _param_types() -> dict:
    """Annotation -> (schema type, kind), as PyTorch's ``infer_schema`` accepts them."""
    table: dict = {Tensor: ("Tensor", TENSOR), Tensor | None: ("Tensor?", OPTIONAL_TENSOR)}
    for seq in _seqs(Tensor):
        table[seq] = ("Tensor[]", TENSOR_LIST)
    for seq in _seqs(Tensor | None):
        table[seq] = ("Tensor?[]", OPTIONAL_TENSOR_LIST)
    for py, name in _SCALARS.items():
        table[py] = (name, VALUE)
        table[py | None] = (name + "?", VALUE)
        if py not in (str, DType):
            for seq in _seqs(py):
                table[seq] = (name + "[]", VALUE)
                table[seq | None] = (name + "[]?", VALUE)
    table[_NUMBER] = ("Scalar", VALUE)
    table[_NUMBER | None] = ("Scalar?", VALUE)
    return table


_PARAM_TYPES = _param_types()


@dataclass(frozen=True)
class Param:
    """One parameter of a custom op: its name, schema type, kind, default and whether the op
    writes into it."""

    name: str
    type: str
    kind: str
    default: Any
    kwarg_only: bool
    mutable: bool

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


@dataclass(frozen=True)
class Schema:
    """A custom op's parsed signature: parameters, and the schema types of what it returns
    (``("Tensor",)``, ``("Tensor[]", "SymInt")``; ``()`` for nothing), ``tupled`` when they
    come back as a tuple (False for one value returned as it is)."""

    params: tuple[Param, ...]
    returns: tuple[str, ...]
    tupled: bool

    @property
    def mutated(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.mutable)

    @functools.cached_property
    def text(self) -> str:
        """PyTorch's schema string, e.g. ``(Tensor x, *, SymInt n=2) -> Tensor``."""
        pieces, kwarg_only = [], False
        for index, p in enumerate(self.params):
            if p.kwarg_only and not kwarg_only:
                pieces.append("*")
                kwarg_only = True
            shown = p.type
            if p.mutable:
                base = p.type.rstrip("?[]")
                shown = f"{base}(a{index}!){p.type[len(base):]}"
            pieces.append(f"{shown} {p.name}" +
                          (f"={_default_text(p.default)}" if p.has_default else ""))
        returns = ", ".join(self.returns)
        if self.tupled:  # (PyTorch writes a tuple of one as "((Tensor))": "(Tensor)" is one)
            returns = f"(({returns}))" if len(self.returns) == 1 else f"({returns})"
        return f"({', '.join(pieces)}) -> {returns}"

    def signature(self) -> inspect.Signature:
        """The Python signature calls are bound with."""
        return inspect.Signature([
            inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY if p.kwarg_only else
                              inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
            for p in self.params])


def infer_schema(prototype_function: Callable, /, *, mutates_args: str | Iterable[str],
                 op_name: str | None = None) -> str:
    """PyTorch's schema string of a type-hinted function (``torch.library.infer_schema``).

    Args:
        prototype_function: the function; every parameter and the return need type hints
            (``Tensor``, ``Optional[Tensor]``, ``list[Tensor]``, ``int``, ``float``, ``bool``,
            ``str``, their optional and list forms; it returns a Tensor, ``list[Tensor]``, a
            number, a tuple of those, or None).
        mutates_args: names of the parameters the function writes into, or ``"unknown"``
            (every tensor parameter).
        op_name: put in front of the schema when given.

    Example:
        >>> def f(x: ember.Tensor, n: int = 2) -> ember.Tensor: ...
        >>> ember.library.infer_schema(f, mutates_args=())
        '(Tensor x, SymInt n=2) -> Tensor'
    """
    text = parse(prototype_function, mutates_args).text
    return text if op_name is None else op_name + text


def parse(fn: Callable, mutates_args: str | Iterable[str]) -> Schema:
    """The :class:`Schema` of ``fn``; raises ArgumentError (a ValueError; PyTorch's messages)
    on what custom ops cannot take."""
    sig = inspect.signature(fn)

    def fail(what: str) -> ArgumentError:
        return ArgumentError(f"infer_schema(func): {what} Got func with signature {sig})")

    if isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ArgumentError(f"mutates_args must be 'unknown' or a collection of parameter names, "
                            f"got the string {mutates_args!r}")
    try:
        hints = typing.get_type_hints(fn)
    except NameError as exc:
        raise fail(f"a type hint could not be resolved ({exc}).") from None
    names = set(sig.parameters)
    unknown = mutates_args == "unknown"
    if not unknown:
        mutates_args = set(mutates_args)
        missing = mutates_args - names
        if missing:
            raise fail(f"{missing} in mutates_args were not found in the custom op's signature. "
                       "mutates_args should contain the names of all args that the custom op "
                       "mutates, or just the string 'unknown' if you don't know.")
    params = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise fail("We do not support positional-only args, varargs, or varkwargs.")
        if p.name not in hints:
            raise fail(f"Parameter {p.name} must have a type annotation.")
        if hints[p.name] not in _PARAM_TYPES:
            raise fail(f"Parameter {p.name} has unsupported type {hints[p.name]}."
                       f"{_unsupported_hint(hints[p.name])}")
        type_, kind = _PARAM_TYPES[hints[p.name]]
        kwarg_only = p.kind == p.KEYWORD_ONLY
        if kwarg_only and kind != VALUE:
            raise NotImplementedError(f"custom_op with kwarg-only Tensor args. Please make your "
                                      f"tensors not kwarg-only. Got: {sig}")
        mutable = kind != VALUE and (unknown or p.name in mutates_args)
        if not unknown and p.name in mutates_args and kind == VALUE:
            raise fail(f"Parameter {p.name} is in mutates_args but is not a tensor.")
        if p.default is not p.empty and p.default is not None and \
                not isinstance(p.default, (int, float, bool, str, DType)):
            raise fail(f"Parameter {p.name} has an unsupported default value type "
                       f"{type(p.default)}.")
        params.append(Param(p.name, type_, kind, p.default, kwarg_only, mutable))
    if not any(p.kind != VALUE for p in params):
        raise fail("Custom ops in Ember need at least one tensor parameter (their device comes "
                   "from it).")
    return Schema(tuple(params), *_returns(sig, hints, fail))


def _unsupported_hint(hint: Any) -> str:
    """What PyTorch's message adds after an unsupported type hint: the tuple workaround and
    the types that are valid."""
    items = typing.get_args(hint)
    tupled = (f" We do not support Tuple inputs in schema. As a workaround, please try to use "
              f"List instead. For example, list[{getattr(items[0], '__name__', items[0])}]."
              if typing.get_origin(hint) is tuple and items else "")
    return (f"{tupled} The valid types are: Tensor, Optional[Tensor], list[Tensor], "
            "list[Optional[Tensor]], int, float, "
            "bool, str, int | float | bool, ember.dtype, their Optional forms and the list "
            "forms of the numbers.")


def _default_text(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, DType):
        return value.name
    return str(value)


#: a return annotation -> its schema type (PyTorch's ``SUPPORTED_RETURN_TYPES``)
_RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]",  # noqa: UP006
                 int: "SymInt", float: "float", bool: "bool", _NUMBER: "Scalar"}


def _returns(sig: inspect.Signature, hints: dict, fail: Callable) -> tuple[tuple[str, ...], bool]:
    if sig.return_annotation is inspect.Signature.empty:
        raise fail("No return type annotation was provided. Please add one.")
    ret = hints.get("return")
    if ret is None or ret is type(None):
        return (), True
    tupled = typing.get_origin(ret) is tuple
    items = typing.get_args(ret) if tupled else (ret,)
    if not all(i in _RETURN_TYPES for i in items):  # (tuple[()]: nothing, as None)
        raise fail(f"Return has unsupported type {ret}. The valid types are: Tensor, "
                   "list[Tensor], int, float, bool, int | float | bool, a tuple of them, or None.")
    return tuple(_RETURN_TYPES[i] for i in items), tupled


_SCHEMA_TYPE = re.compile(
    r"(Tensor|SymInt|int|float|bool|str|ScalarType|Scalar)(\(\w+!?\))?(\[\d*\])?(\?)?")

# PyTorch's schema types that Ember's custom ops do not take
_TORCH_ONLY = re.compile(r"(Device|Layout|MemoryFormat|Generator|Dimname|Stream|Storage|Any)"
                         r"(\[\d*\])?\??")


def parse_schema(text: str) -> Schema:
    """The :class:`Schema` of a PyTorch schema string such as ``"(Tensor x, float a=1.0) ->
    Tensor"`` (the types :func:`infer_schema` writes; ``int`` reads as ``SymInt``,
    ``Tensor(a!)`` marks a mutated argument, returned values may be named)."""
    def fail(what: str) -> ArgumentError:
        return ArgumentError(f"schema {text!r}: {what}")

    whole = re.fullmatch(r"\s*\((.*)\)\s*->\s*(.+?)\s*", text)
    if whole is None:
        raise fail("expected '(arguments) -> returns'")
    params, kwarg_only = [], False
    for piece in _split_top_level(whole.group(1)):
        if piece == "*":
            kwarg_only = True
            continue
        type_text, _, rest = piece.partition(" ")
        name, has_default, default = (s.strip() for s in rest.partition("="))
        match = _SCHEMA_TYPE.fullmatch(re.sub(r"^Tensor\?(\[\d*\])$", r"Tensor\1?", type_text))
        if match is None and _TORCH_ONLY.fullmatch(type_text) and name.isidentifier():
            raise fail(f"the type {type_text!r} is not supported by Ember's custom ops (they "
                       "take Tensor, Tensor?, Tensor[], Tensor?[], int, float, bool, str, Scalar, "
                       "ScalarType, and the optional and list forms of the numbers)")
        if match is None or not name.isidentifier():
            raise fail(f"cannot read the argument {piece!r}")
        base, alias, listed, optional = match.groups()
        type_ = ("SymInt" if base == "int" else base) + ("[]" if listed else "") + \
            (optional or "")  # (a list's length, int[2], is not checked)
        type_ = "Tensor?[]" if type_ == "Tensor[]?" and "?[" in type_text else type_
        kind = {"Tensor": TENSOR, "Tensor?": OPTIONAL_TENSOR, "Tensor[]": TENSOR_LIST,
                "Tensor?[]": OPTIONAL_TENSOR_LIST}.get(type_, VALUE if base != "Tensor" else None)
        if kind is None:
            raise fail(f"the type {type_text!r} is not supported")
        if kwarg_only and kind != VALUE:
            raise NotImplementedError(f"custom_op with kwarg-only Tensor args. Please make your "
                                      f"tensors not kwarg-only. Got: {text}")
        value = _literal(default, fail) if has_default and base != "ScalarType" else \
            _dtype_default(default, fail) if has_default else inspect.Parameter.empty
        params.append(Param(name, type_, kind, value, kwarg_only, bool(alias and "!" in alias)))
    returns = whole.group(2)
    tupled = returns.startswith("(") and returns.endswith(")")
    inner = returns[1:-1].strip() if tupled else returns
    if tupled and inner.startswith("(") and inner.endswith(")"):  # "((Tensor))": a 1-tuple
        inner = inner[1:-1]
    elif tupled and len(_split_top_level(inner)) == 1:  # "(Tensor)": one Tensor, as PyTorch
        tupled = False
    items = _split_top_level(inner) if tupled else [inner]
    # (a returned value may be named: "(Tensor values, Tensor indices)")
    for item in items:
        if re.match(r"Tensor\(\w+!?\)", item):
            raise fail(f"it returns a view of an input ({item!r}), which Ember's custom ops do "
                       "not support: they return new tensors. Hint: return a fresh Tensor, or "
                       "for an out= op mark the argument Tensor(a!) and return ()")
    types = tuple({"int": "SymInt"}.get(item.split()[0], item.split()[0]) for item in items)
    if not all(t in {*_RETURN_TYPES.values(), "Tensor?"} and len(i.split()) <= 2
               for t, i in zip(types, items)):
        raise fail(f"the returns {returns!r} are not supported: Tensor, Tensor?, Tensor[], "
                   "SymInt, float, bool, Scalar, a tuple of them, or ()")
    if not any(p.kind != VALUE for p in params):
        raise fail("custom ops in Ember need at least one tensor parameter")
    return Schema(tuple(params), types, tupled)


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, pieces stripped."""
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and not depth:
            pieces.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return pieces + [last] if last else pieces


# c10::ScalarType's numbers, which PyTorch prints for a dtype default ("ScalarType dt=7")
_SCALAR_TYPE_CODES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                      6: "float32", 7: "float64", 9: "complex64", 10: "complex128", 11: "bool",
                      15: "bfloat16"}


def _dtype_default(text: str, fail: Callable) -> DType | None:
    """A ``ScalarType`` default: None, PyTorch's number of a dtype, or its name (``float32``,
    ``torch.float32``, as ``infer_schema`` writes it)."""
    name = _SCALAR_TYPE_CODES.get(int(text), text) if text.isdigit() else text
    if name == "None":
        return None
    try:
        return dtypes.to_dtype(name)
    except EmberError:
        raise fail(f"cannot read the dtype default {text!r}") from None


def _literal(text: str, fail: Callable) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise fail(f"cannot read the default value {text!r}") from None
