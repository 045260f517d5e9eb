"""Generated forwarding functions: a function with an op's own parameters that calls the op
and hands a tensor-like operand (a nested tensor, see :mod:`ember.ops.overrides`) over when
the op does not; with ``into``, one that also takes PyTorch's ``out=`` (:mod:`ember.ops.out_arg`).

Generated rather than a closure over ``*args, **kwargs``, so that a call costs one frame and no
argument packing (a closure costs several times that, more with keywords); the ``try`` costs
nothing until it catches (Python 3.11).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from ember.errors import not_a_tensor_error
from ember.ops.overrides import TensorLikeOperand, handle

__all__ = ["hands_over", "not_a_tensor"]

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
              into: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A function with ``signature``'s parameters (``fn``'s) that calls ``fn`` with them; given
    ``into``, it also takes a keyword ``out=None`` and calls ``into(out, ...)`` when ``out`` is
    given."""
    listed = list(signature.parameters.values())
    params, call = [], []
    scope = {"_fwd_fn": fn, "_fwd_into": into, "_fwd_handle": handle,
             "_fwd_tensor_like": TensorLikeOperand, "_fwd_not_a_tensor": not_a_tensor}
    for p in listed:
        text = p.name
        if p.default is not p.empty:
            scope[f"_fwd_{p.name}"] = p.default
            text += f"=_fwd_{p.name}"
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
    if into is not None:
        if not any(q.startswith("*") for q in params):
            params.append("*")
        params.append("out=None")
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
    # (a private name: errors that name "the outermost ember.ops function" skip it, see
    # ember.ops.overrides.outermost_op; named as a file in this folder, so that what looks for
    # the user's frame, as the source lines of traced ops, skips it as Ember's own)
    kind = "out= form" if into is not None else "hand-over form"
    source = f"def _forwarding({', '.join(params)}):\n" + body
    where = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         f"<{kind} of {fn.__name__}>")
    exec(compile(source, where, "exec"), scope)  # noqa: S102
    # the op a handler is given: the public function (an out= form's op is public itself)
    scope["_fwd_op"] = fn if into is not None else scope["_forwarding"]
    return scope["_forwarding"]


def not_a_tensor(op: str, arguments: dict[str, Any], error: AttributeError) -> None:
    """Raises PyTorch's ``TypeError`` naming the argument of ``op`` that is no tensor (a list,
    a NumPy array) when ``error`` came from reading a tensor's attribute off it; else returns.

    Example:
        >>> ember.exp([1.0, 2.0])
        Traceback (most recent call last):
        TypeError: exp(): argument 'input' must be Tensor, not list. Hint: ...
    """
    culprit = getattr(error, "obj", _UNSET)  # (None when the user passed None)
    if culprit is _UNSET or hasattr(culprit, "_data"):
        return
    for name, value in arguments.items():
        if value is culprit:
            raise not_a_tensor_error(op, name, culprit) from error
        if isinstance(value, (list, tuple)) and any(v is culprit for v in value):
            raise not_a_tensor_error(op, name, culprit, many=True) from error
