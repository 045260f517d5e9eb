"""Which public op the user called, found from the running frames on an error's path (free
until an error is made): errors made inside a composite op name it (``margin_ranking_loss:
sub: shapes …``, through :class:`ember.errors.EmberError`'s hook), and an argument of the
wrong kind is named with its op (:mod:`ember.ops.argument_kind`).

The op is the outermost public function of ``ember.ops`` (or ``ember.fft``,
``ember.special``) the running code is inside, up to the user's code: see
:func:`public_frames`.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any

from ember.errors import set_message_hook

__all__: list[str] = []


def outermost_op(tb: TracebackType | None) -> str:
    """The public function of ``ember.ops`` the user called, found in the traceback ``tb``
    (``stack``, not the ``reshape`` it calls; see :func:`public_frames`), else "conversion to
    an array": the op an error about an operand it cannot take names, found only when the
    message is read."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    found = _public(reversed(frames))
    return _op_name(found[0]) if found else _NO_OP


def calling_op() -> str:
    """:func:`outermost_op` of the frames calling this function now (for an error's message
    made where it is raised)."""
    found = public_frames(sys._getframe(1))
    return _op_name(found[0]) if found else _NO_OP


def public_frames(frame: FrameType | None) -> list[FrameType]:
    """The frames of Ember's public op functions that ``frame`` runs inside, outermost first:
    ``[margin_ranking_loss, sub]`` for a frame inside the ``sub`` that ``margin_ranking_loss``
    calls. The walk outward from ``frame`` ends at the first frame of neither Ember nor the
    standard library after an op's (the user's code), so an op inside a function an op calls
    back (a ``scan`` body) is found as the user's call; Ember's other frames (a handler that
    runs the op, autocast's or the profiler's; a module's ``forward``) are walked through."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return _public(frames)


def _public(frames: Iterable[FrameType]) -> list[FrameType]:
    found: list[FrameType] = []
    for frame in frames:  # (innermost first)
        file = frame.f_code.co_filename
        if file in _MACHINERY:
            continue
        if file.startswith(_OP_FILES):
            if _op_name(frame) is not None:
                found.append(frame)
        elif found and not file.startswith(_IN_EMBER) and (not file.startswith(_STDLIB)
                                                        or "-packages" in file):
            break
    return found[::-1]


def _op_name(frame: FrameType) -> str | None:
    """The public name of the op function running in ``frame``, None for a private helper or
    the plumbing (``apply``, a primitive's rules)."""
    code = frame.f_code
    name = code.co_name
    if name == "op":  # a generated public function (unary.py's): the name it was given
        name = getattr(frame.f_locals.get("op"), "__name__", name)
    elif code.co_freevars:  # another function a factory made: its code's name is not its own
        return None
    elif name == "_forwarding":  # a generated out= or hand-over form: its op's, in its file name
        name = frame.f_code.co_filename.rpartition(" of ")[2].rstrip(">")
    return None if name.startswith(("_", "<")) or name in _PLUMBING else name


def public_message(message: str) -> str:
    """``message``, an error's, prefixed with the public function the user called when it
    starts with another op's name: ``margin_ranking_loss: sub: shapes (3,) and (4,) do not
    broadcast`` (the hook of :class:`ember.errors.EmberError`)."""
    lead = _LEAD.match(message)
    if lead is None:
        return message
    named = lead.group(1).rstrip("_")
    names = [_op_name(frame) for frame in public_frames(sys._getframe(1))]
    if not names or names[0].rstrip("_") == named:
        return message
    # (only for an op running inside the one called, or a primitive: not for an error a helper
    # the user called makes for an op that is not running, dim_error's for size)
    from ember.ops.primitive import PRIMITIVES  # (the error path only; primitive imports this)

    if named in PRIMITIVES or named in (n.rstrip("_") for n in names):
        return f"{names[0]}: {message}"
    return message


def argument_of(value: Any) -> tuple[str, str, str, Any] | None:
    """For ``value``, found bad inside an op now running: (the public op the user called, the
    name of its argument that holds ``value``, the type that argument is annotated with, or
    "", and the argument's value: ``value``, or the tensor ``value`` was made of), else None;
    for the error of an argument of the wrong kind."""
    found = public_frames(sys._getframe(1))
    if not found:
        return None
    op = _op_name(found[0])
    for frame in found:
        arguments, annotations = _arguments(frame)
        held = [n for n, v in arguments.items() if _holds(v, value)]
        if held:  # (a later argument when the input itself is passed as a flag too; for None,
            # which every defaulted argument holds as well, the first: full's fill_value)
            name = held[0] if value is None else held[-1]
            return op, name, annotations.get(name, ""), value
    # else ``value`` was made of an argument (``p < 0`` of a tensor ``p``): a tensor given
    # for an argument annotated as no tensor
    arguments, annotations = _arguments(found[0])
    for name, held in arguments.items():
        annotation = annotations.get(name, "")
        if hasattr(held, "_data") and annotation and not any(
                word in annotation for word in ("Tensor", "Any", "object")):
            return op, name, annotation, held
    return op, "", "", value


def _arguments(frame: FrameType) -> tuple[dict[str, Any], dict[str, str]]:
    """The arguments of the function running in ``frame`` (name -> value now) and their
    annotations as written (the ops' are strings), for the functions found by name."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + \
        bool(code.co_flags & 8)
    local = frame.f_locals
    arguments = {n: local.get(n) for n in code.co_varnames[:count]}
    function = frame.f_globals.get(code.co_name)
    annotations = getattr(function, "__annotations__", None) or {}
    if getattr(function, "__code__", None) is not code:
        annotations = {}
    return arguments, {n: a for n, a in annotations.items() if isinstance(a, str)}


def _holds(held: Any, value: Any) -> bool:
    if held is value:
        return True
    if isinstance(held, (tuple, list)):
        return any(h is value for h in held)
    return isinstance(held, dict) and any(h is value for h in held.values())


_NO_OP = "conversion to an array"
_EMBER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_IN_EMBER = os.path.join(_EMBER, "")
# the ops' files: ember/ops/ and the namespaces that define functions over them
_OP_FILES = (os.path.join(_EMBER, "ops", ""), os.path.join(_EMBER, "fft.py"),
             os.path.join(_EMBER, "special.py"))
# the files that look for the op, and the argument readers (theirs are never the op the user
# called: ``normalize_dim`` checks a dim for an op of ember.sparse, outside these files)
_MACHINERY = frozenset(os.path.join(_EMBER, "ops", f) for f in ("public_op.py",
                                                                 "argument_kind.py",
                                                                 "int_args.py", "dims.py"))
_STDLIB = (sysconfig.get_paths()["stdlib"], "<frozen")
_PLUMBING = frozenset(("eager", "apply", "apply_below", "run_below", "op", "inplace",
                       "not_casting", "forward", "infer", "vjp", "jvp", "flops", "reads", "run",
                       "explain_failure"))
_LEAD = re.compile(r"(\w+)(?:\(\))?: ")

set_message_hook(public_message)
