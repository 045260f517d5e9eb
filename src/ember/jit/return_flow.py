"""Whether a value the user's code just made goes nowhere but into the function's return value:
the bytecode after the instruction that made it (``frame.f_lasti``) only loads other names or
constants, builds tuples, lists or dicts (the value not as a key) and returns (or stores it
in a local, with nothing but such code up to the return). Then a compiled step may hand back
that value as read again at call time (see :mod:`ember.jit.lr_reads`): no code ran between
the read and the return, so the lr then is the lr as read."""

from __future__ import annotations

import dis
import os
import sys
from typing import Any

from ember.jit.sources import _is_ember_file

# instructions that push one value and run no code of the user's
_LOADS = frozenset({"LOAD_FAST", "LOAD_CONST", "LOAD_DEREF"})
# instructions that build one container from the top ``arg`` (or, for a dict, more) values
_BUILDS = {"BUILD_TUPLE": lambda n: n, "BUILD_LIST": lambda n: n,
           "BUILD_MAP": lambda n: 2 * n, "BUILD_CONST_KEY_MAP": lambda n: n + 1}


def only_returned(frame: Any, made_by: str, subscripts: int = 0) -> tuple | None:
    """The constant keys of the ``subscripts`` subscripts (``[0]``, ``["lr"]``) the value
    made by the instruction running at ``frame.f_lasti`` (a ``made_by``: ``"CALL"``,
    ``"BINARY_SUBSCR"``) takes first, where what they give then only goes into containers
    the function returns, at once or through a local; else None. (Checked on CPython 3.11
    only, whose instructions this reads; elsewhere None.) For the frame of
    ``return loss, o.param_groups[0]["lr"]`` stopped at its ``param_groups[0]`` subscript,
    ``only_returned(frame, "BINARY_SUBSCR", 1)`` gives ``("lr",)``.
    """
    if sys.version_info[:2] != (3, 11) or not _runs_compiled(frame):
        return None
    code = [*dis.get_instructions(frame.f_code), None, None]  # (f_lasti: at its last cache)
    at = next(i for i, x in enumerate(code) if x is None or x.offset > frame.f_lasti)
    if at == 0 or code[at - 1].opname != made_by:
        return None
    keys = []
    for _ in range(subscripts):
        if code[at] is None or code[at].opname != "LOAD_CONST" or \
                code[at + 1].opname != "BINARY_SUBSCR":
            return None
        keys.append(code[at].argval)
        at += 2
    return tuple(keys) if _returned(code, at) else None


def _returned(code: list, at: int) -> bool:
    """Whether the value on top of the stack before ``code[at]`` only goes into containers
    the function returns: at once, or kept in a local (:func:`_local_returned`)."""
    above = 0  # (values pushed on top of it since)
    for k, x in enumerate(code[at:-2], at):
        if x.opname == "STORE_FAST" and above == 0:  # (it, or a container holding it)
            return _local_returned(code, k)
        if x.opname in _LOADS:
            above += 1
        elif x.opname in _BUILDS:
            taken = _BUILDS[x.opname](x.arg)  # (taking it: the container is followed)
            if x.opname == "BUILD_MAP" and taken > above and above % 2:
                return False  # (a dict's key: the output's structure, not a leaf read again)
            above = above - taken + 1 if taken <= above else 0
        elif x.opname == "RETURN_VALUE":
            return above == 0
        elif x.opname != "NOP":
            return False
    return False


def _local_returned(code: list, at: int) -> bool:
    """Whether the value ``code[at]`` stores in a local (``lr = ...``) is only returned: up to
    the return, nothing runs but loads of locals and constants, stores to locals and builds of
    containers (a call, an attribute or item store may change the lr after it was read), and
    each read of that local only goes into containers returned (:func:`_returned`)."""
    name, end = code[at].argval, at + 1
    while code[end] is not None and code[end].opname != "RETURN_VALUE":
        if code[end].opname not in _QUIET:
            return False
        end += 1
    return code[end] is not None and all(
        _returned(code, k + 1) for k in range(at + 1, end)
        if code[k].opname == "LOAD_FAST" and code[k].argval == name)


# instructions that run none of the user's code (nor a jump: the rest runs once, in order)
_QUIET = _LOADS | _BUILDS.keys() | {"STORE_FAST", "NOP"}


def _runs_compiled(frame: Any) -> bool:
    """Whether ``frame`` is the function a trace runs (its return value is the call's): called
    from compiled.py, with only Ember's frames (an autocast context) up to the trace's
    ``_record`` (not a compiled function the user's code calls inside another's trace)."""
    caller = frame.f_back
    if caller is None or caller.f_code.co_filename != _COMPILED:
        return False
    while caller is not None and _is_ember_file(caller.f_code.co_filename):
        if caller.f_code.co_filename == _COMPILED and caller.f_code.co_name == "_record":
            return True
        caller = caller.f_back
    return False


_COMPILED = os.path.join(os.path.dirname(__file__), "compiled.py")
