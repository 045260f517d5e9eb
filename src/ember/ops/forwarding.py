"""Generated forwarding functions: a function with an op's own parameters that calls the op
and hands a tensor-like operand (a nested tensor, see :mod:`ember.ops.overrides`) over when
the op does not; with ``into``, one that also takes PyTorch's ``out=`` (:mod:`ember.ops.out_arg`);
with ``numpy_names``, one that also takes NumPy's names ``axis=`` and ``keepdims=`` for
``dim`` and ``keepdim`` (:mod:`ember.ops.numpy_names`).

Generated rather than a closure over ``*args, **kwargs``, so that a call costs one frame and no
argument packing (a closure costs several times that, more with keywords); the ``try`` costs
nothing until it catches (Python 3.11).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Collection
from types import CodeType, FunctionType
from typing import Any

from ember.dtypes import DType
from ember.errors import ArgumentTypeError, not_a_tensor_error, refuse_non_tensor, type_name
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, handle
from ember.tensor import Tensor

__all__ = ["hands_over", "hand_over_methods", "not_a_tensor", "check_tensors"]

_UNSET = object()


def hands_over(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``fn`` handing a tensor-like operand over to its class's handler when ``fn``
    reads one as a tensor (for ops whose body does not catch :class:`TensorLikeOperand`).

    Example:
        >>> @hands_over
        ... def double(input):
        ...     return input * 2
    """
    return functools.update_wrapper(forwarder(fn, inspect.signature(fn)), fn)


def forwarder(fn: Callable[..., Any], signature: inspect.Signature,
              into: Callable[..., Any] | None = None,
              numpy_names: bool = False, method: bool = False) -> Callable[..., Any]:
    """A function with ``signature``'s parameters (``fn``'s) that calls ``fn`` with them; given
    ``into``, it also takes a keyword ``out=None`` and calls ``into(out, ...)`` when ``out`` is
    given; with ``numpy_names``, it also takes ``axis=`` for ``dim`` and ``keepdims=`` for
    ``keepdim`` (those of the two ``fn`` has). A handler is given ``fn`` as the op (the form
    itself where it is the public function: neither ``into``, ``numpy_names`` nor ``method``)."""
    listed = list(signature.parameters.values())
    aliases = {name: alias for name, alias in NUMPY_NAMES.items() if numpy_names
               and name in signature.parameters and alias not in signature.parameters}
    # a required parameter from an aliased one on may come by its alias or after it by
    # keyword: it gets an "unset" default, and the call resolves what is unset
    first = next((i for i, p in enumerate(listed) if p.name in aliases), len(listed))
    unset = [p.name for p in listed[first:] if p.default is p.empty
             and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    params, call = [], []
    scope = {"_fwd_fn": fn, "_fwd_into": into, "_fwd_handle": handle,
             "_fwd_tensor_like": TensorLikeOperand, "_fwd_not_a_tensor": not_a_tensor,
             "_fwd_unset": _UNSET, "_fwd_resolve": resolve_numpy_names}
    for p in listed:
        text = p.name
        if p.default is not p.empty:
            scope[f"_fwd_{p.name}"] = p.default
            # (an aliased one: "unset", so that giving it and its alias is refused, as
            # PyTorch's parser refuses x.sum(None, axis=0) though None is dim's default)
            text += "=_fwd_unset" if p.name in aliases else f"=_fwd_{p.name}"
        elif p.name in unset:
            text += "=_fwd_unset"
        if p.kind is p.VAR_POSITIONAL:
            text = f"*{p.name}"
        elif p.kind is p.VAR_KEYWORD:
            continue  # (last)
        elif p.kind is p.KEYWORD_ONLY and not any(q.startswith("*") for q in params):
            params.append("*")  # (the keyword-only ones start here)
        params.append(text)
        call.append(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else text.split("=")[0])
        if p.kind is p.POSITIONAL_ONLY and (p is listed[-1] or listed[listed.index(p) + 1].kind
                                            is not p.POSITIONAL_ONLY):
            params.append("/")
    if into is not None or aliases:
        if not any(q.startswith("*") for q in params):
            params.append("*")
    if into is not None:
        params.append("out=None")
    params.extend(f"{alias}=_fwd_unset" for alias in aliases.values())
    for p in listed:
        if p.kind is p.VAR_KEYWORD:
            params.append(f"**{p.name}")
            call.append(f"**{p.name}")
    forwarded = ", ".join(call)
    positional = "".join(f"{c}, " for c in call if "=" not in c and not c.startswith("**"))
    keywords = ", ".join(f"{c.split('=')[0]!r}: {c.split('=')[0]}" if "=" in c else c
                         for c in call if "=" in c or c.startswith("**"))
    named = ", ".join(f"{p.name!r}: {p.name}" for p in listed)
    body = (f"    try:\n        return _fwd_fn({forwarded})\n"
            f"    except _fwd_tensor_like:\n"
            f"        return _fwd_handle(_fwd_op, ({positional}), {{{keywords}}})\n"
            f"    except AttributeError as error:\n"
            f"        _fwd_not_a_tensor(_fwd_fn.__name__, {{{named}}}, error)\n"
            f"        raise\n")
    if into is not None:
        body = (f"    if out is not None:\n        return _fwd_into(out, {forwarded})\n" + body)
    if aliases:
        names = list(dict.fromkeys([*aliases, *unset]))
        test = " or ".join([*(f"{alias} is not _fwd_unset" for alias in aliases.values()),
                            *(f"{name} is _fwd_unset" for name in unset)])
        values = ", ".join(f"{name!r}: {name}" for name in names)
        given = ", ".join(f"{alias!r}: {alias}" for alias in aliases.values())
        defaults = ", ".join(f"{name!r}: _fwd_{name}" for name in aliases
                             if f"_fwd_{name}" in scope)
        plain = "".join(f"        if {name} is _fwd_unset:\n            {name} = _fwd_{name}\n"
                        for name in aliases if f"_fwd_{name}" in scope)
        body = (f"    if {test}:\n        {', '.join(names)}, = _fwd_resolve("
                f"_fwd_fn.__name__, {{{values}}}, {{{given}}}, {{{defaults}}})\n"
                + (f"    else:\n{plain}" if plain else "") + body)
    # (a private name: errors that name "the outermost ember.ops function" skip it, see
    # ember.ops.overrides.outermost_op; named as a file in this folder, so that what looks for
    # the user's frame, as the source lines of traced ops, skips it as Ember's own)
    kind = "out= form" if into is not None else "NumPy names form" if aliases else \
        "hand-over form"
    source = f"def _forwarding({', '.join(params)}):\n" + body
    where = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         f"<{kind} of {fn.__name__}>")
    exec(_compiled(source, where), scope)  # noqa: S102
    # the op a handler is given: the public function (that of an out= form or one taking
    # NumPy's names is public itself)
    scope["_fwd_op"] = fn if into is not None or aliases or method else scope["_forwarding"]
    return scope["_forwarding"]


#: the names PyTorch's schemas give the tensor operands of its pointwise ops besides ``self``
OPERAND_NAMES = frozenset({"other", "end", "weight", "values", "exponent", "tensor1", "tensor2"})


def hand_over_methods(cls: type, names: Collection[str]) -> None:
    """Binds on ``cls`` (:class:`Tensor`, before its operators are wrapped) the hand-over form
    of each method that is an op named in ``names`` (those whose ``ember.*`` function hands over
    in its ``out=`` form) and takes another tensor operand (a parameter named in
    :data:`OPERAND_NAMES`), where the op's own body does not hand over: so ``dense.hypot(nt)``
    and ``dense << mt`` hand the tensor-like over as ``ember.hypot(dense, nt)`` does, and its
    handler is given the same op. The ops that hand over in their body (``add``, ``mul``,
    ``pow``, the comparisons) stay bound as they are: their methods and operators cost nothing
    more; the others (``hypot``, ``fmod``, ``lerp``, …) pay the form's frame (~40 ns).

    Example:
        >>> ember.Tensor.hypot.__wrapped__ is ember.ops.special.hypot  # (bound at import)
        True
    """
    forms: dict[Callable[..., Any], Callable[..., Any]] = {}
    for name, fn in list(vars(cls).items()):
        if not isinstance(fn, FunctionType) or fn.__name__ not in names or \
                "__wrapped__" in vars(fn):
            continue
        code = fn.__code__
        operands = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
        if "handle" in code.co_names or OPERAND_NAMES.isdisjoint(operands):
            continue  # (hands over itself, or takes no tensor operand but self)
        if fn not in forms:
            forms[fn] = functools.update_wrapper(
                forwarder(fn, inspect.signature(fn), method=True), fn)
        setattr(cls, name, forms[fn])


_CODE: dict[str, CodeType] = {}  # a forwarding function's source -> its code, compiled once


def _compiled(source: str, where: str) -> CodeType:
    """``source`` compiled as file ``where``: compiled once a source (half of the ~450 forms
    share theirs with another op's: ~0.1 s of ``import ember``), renamed for each op."""
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(source, where, "exec")
    return code.replace(co_filename=where, co_consts=tuple(
        c.replace(co_filename=where) if isinstance(c, CodeType) else c for c in code.co_consts))


#: PyTorch's argument parser takes NumPy's names for these parameters of its native functions
NUMPY_NAMES = {"dim": "axis", "keepdim": "keepdims"}


def resolve_numpy_names(op: str, values: dict[str, Any], aliases: dict[str, Any],
                        defaults: dict[str, Any]) -> tuple[Any, ...]:
    """The values of a generated function's parameters ``values`` (by name, aliased ones
    first; unset where not given) once NumPy's names ``aliases`` stand in for theirs (``axis``
    for ``dim``); ``defaults``: the aliased parameters' own defaults. Raises PyTorch's
    ``TypeError`` for a parameter given both ways (its default value too) or a required one
    given neither way."""
    for name, alias in NUMPY_NAMES.items():
        given = aliases.get(alias, _UNSET)
        if given is _UNSET:
            continue
        if values[name] is not _UNSET:
            raise TypeError(f"{op}(): got {name} and {alias}, NumPy's name for it; give one")
        values[name] = given
    for name, default in defaults.items():
        if values[name] is _UNSET:
            values[name] = default
    missing = [name for name, value in values.items() if value is _UNSET]
    if missing:
        raise TypeError(f"{op}() missing required argument{'s' if len(missing) > 1 else ''}: "
                        + ", ".join(repr(name) for name in missing))
    return tuple(values.values())


def not_a_tensor(op: str, arguments: dict[str, Any], error: AttributeError) -> None:
    """Raises PyTorch's ``TypeError`` naming the argument of ``op`` that is no tensor (a list,
    a NumPy array) when ``error`` came from reading a tensor's attribute off it; else returns.

    Example:
        >>> ember.exp([1.0, 2.0])
        Traceback (most recent call last):
        TypeError: exp(): argument 'input' must be Tensor, not list. Hint: ...
    """
    culprit = getattr(error, "obj", _UNSET)  # (None when the user passed None)
    if culprit is _UNSET or hasattr(type(culprit), "_data"):  # (a tensor-like's own error)
        return

    def read_off(value: Any) -> bool:
        """Whether the attribute was read off ``value`` or off its dtype (when that dtype is
        not Ember's: a NumPy array's, a PyTorch tensor's)."""
        return value is culprit or (
            culprit is not None and not isinstance(culprit, DType)
            and not hasattr(type(value), "_data") and getattr(value, "dtype", None) is culprit)

    for name, value in arguments.items():
        if read_off(value):
            raise not_a_tensor_error(op, name, value) from error
        if isinstance(value, (list, tuple)):
            for v in value:
                if read_off(v):
                    raise not_a_tensor_error(op, name, v, many=True) from error


def check_layer_operands(op: str, input: Any, weight: Any, bias: Any) -> None:
    """Refuses a NumPy array, PyTorch tensor or Python value given as a layer op's input,
    weight or (optional) bias, naming it as PyTorch does (``F.linear``'s, the convolutions');
    a tensor-like passes, its own error standing.

    Example:
        >>> check_layer_operands("linear", ember.ones(2, 2), ember.ones(2, 2), [0.0, 1.0])
        Traceback (most recent call last):
        TypeError: linear(): argument 'bias' must be Tensor, not list. Hint: ...
    """
    if isinstance(input, Tensor) and isinstance(weight, Tensor) and (
            bias is None or isinstance(bias, Tensor)):
        return
    for name, value in (("input", input), ("weight", weight), ("bias", bias)):
        if value is not None or name != "bias":
            refuse_non_tensor(op, name, value)


def check_tensors(op: str, **named: Any) -> None:
    """Refuses a number where ``op`` takes only tensors (as PyTorch), naming the argument; a
    registered tensor-like (an ``ember.fx`` proxy, a nested tensor) raises
    :class:`TensorLikeOperand` instead, which a :func:`hands_over` function hands over.

    Example:
        >>> check_tensors("cdist", x1=ember.ones(2, 2), x2=[[1.0, 2.0]])
        Traceback (most recent call last):
        ember.errors.ArgumentTypeError: cdist: x2 must be a Tensor, got list. Hint: ...
    """
    for name, x in named.items():
        if not isinstance(x, Tensor):
            hand_over_tensor_like(x, name)
            raise ArgumentTypeError(f"{op}: {name} must be a Tensor, got {type_name(x)}. "
                                    "Hint: wrap it with ember.tensor(...)")


def hand_over_tensor_like(x: Any, name: str) -> None:
    """Raises a :class:`TensorLikeOperand` (which a :func:`hands_over` function catches) when
    ``x`` is a registered tensor-like read where a tensor or number belongs: its class's own,
    which reading its data raises, else one naming ``name``. Another object posing as a tensor
    (its class has ``_data``) raises what reading that raises: a quantized tensor's
    QuantizedOperandError names the float module and the fix. Nothing for other values."""
    if type(x) in TENSOR_LIKE:
        _ = x._data
        raise TensorLikeOperand(name)
    if hasattr(type(x), "_data"):
        _ = x._data
