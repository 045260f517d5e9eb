"""Whether a value the user's code just made goes nowhere but into the function's return value:
the bytecode after the instruction that made it (``frame.f_lasti``) only loads other names or
constants, builds tuples, lists or dicts and returns. Then a compiled step may hand back that
value as read again at call time (see :mod:`ember.jit.lr_reads`): no code saw the trace's."""

from __future__ import annotations

import dis
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
    the function returns; else None. (Checked on CPython 3.11 only, whose instructions this
    reads; elsewhere None.)

    Example:
        >>> only_returned(frame_of("return loss, o.param_groups[0]['lr']"), "BINARY_SUBSCR", 1)
        ('lr',)
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
    above = 0  # (values pushed on top of it since)
    for x in code[at:-2]:
        if x.opname in _LOADS:
            above += 1
        elif x.opname in _BUILDS:
            taken = _BUILDS[x.opname](x.arg)  # (taking it: the container is followed)
            above = above - taken + 1 if taken <= above else 0
        elif x.opname == "RETURN_VALUE":
            return tuple(keys) if above == 0 else None
        elif x.opname != "NOP":
            return None
    return None


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


_COMPILED = __file__.rsplit("return_flow.py", 1)[0] + "compiled.py"
