"""Where a compiled function's work came from in the user's code, and the error that names
that line: :class:`TraceError`, for Python that needs a value only a run has."""

from __future__ import annotations

import functools
import linecache
import os
import sys
import threading
import warnings
from typing import Any

from ember.errors import EmberError, OpError
from ember.jit.ir import Source

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _Scope(threading.local):
    """The path of the module being called (``""``: the root or none), which each
    :class:`Source` made records; kept by :func:`ember.export.capture.module_scopes`."""

    path = ""


SCOPE = _Scope()


class TraceError(EmberError, RuntimeError):
    """Python code in a compiled function needed a value that only exists when it runs;
    ``where`` is the user's line that needed it (`` at file:line (`code`)``), or empty."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class DataDependentShape(OpError):
    """A traced primitive's output size depends on its input's values (``nonzero``, which
    boolean-mask indexing runs, ``unique``): ``primitive`` names it, ``source`` is the user's
    line that called it (None if unknown)."""

    def __init__(self, message: str, primitive: str, source: Source | None) -> None:
        super().__init__(message)
        self.primitive, self.source = primitive, source


def user_source(what: str = "") -> Source | None:
    """The innermost frame outside Ember's own code: the user's line that made an op."""
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not _is_ember_file(path):
            line = frame.f_lineno
            return Source(path, line, linecache.getline(path, line).strip(), what,
                          SCOPE.path)
        frame = frame.f_back
    return None


@functools.cache
def _is_ember_file(path: str) -> bool:
    return os.path.abspath(path).startswith(_EMBER_DIR)


def called_by_user(*plumbing: str) -> bool:
    """Whether the code below the caller's frame, past the frames of the files ``plumbing``
    (a method's and the hooks' that told the caller), is the user's, not Ember's own."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in plumbing:
        frame = frame.f_back
    return frame is not None and not _is_ember_file(frame.f_code.co_filename)


_BRANCH = ("branch with ember.cond(pred, true_fn, false_fn, operands) (both branches are "
           "compiled) or ember.where")


def _at(src: Source | None) -> str:
    return "" if src is None else f" at {src.file}:{src.line} (`{src.text}`)"


def value_read_error(t: Any, what: str, src: Source | None, function: list[str]) -> TraceError:
    """The error for Python reading a traced tensor's value at ``src`` (inside ``function``:
    a custom ``autograd.Function``'s forward or backward, if any)."""
    where = _at(src)
    if function:  # (torch.compile breaks its graph at such a Function; no Ember graph breaks)
        flow, fix = ("Python control flow on a traced value or ", f"{_BRANCH}, ") \
            if what == "bool()" else ("", "")  # (an ``if`` or ``while`` on a value)
        return TraceError(
            f"ember.jit: {what} needs the value of a traced tensor (shape {tuple(t.shape)})"
            f"{where}, in {function[0]}: a Function is traced op by op, and {flow}code that "
            "leaves Ember there (NumPy on .numpy(), .item(), .tolist()) sees no values while "
            f"tracing, so it cannot be compiled. Hint: {fix}make that code one opaque op with "
            "ember.library.custom_op (its gradient by register_autograd; one equation in the "
            "graph: docs/custom_ops.md), write it with Ember ops, or call it outside the "
            "compiled function", where)
    return TraceError(
        f"ember.jit: {what} needs the value of a traced tensor (shape {tuple(t.shape)})"
        f"{where}, but while tracing only its shape and dtype are fixed; Python control "
        "flow, .item(), .numpy(), .tolist() and print() on traced values cannot be "
        "compiled. Hint: pass the values it needs as Python numbers, not as a tensor (a "
        "number or tuple argument, or one in static_argnums=...: each new value traces "
        f"again), {_BRANCH}, loop with ember.while_loop, compute with tensor ops instead, or "
        "move the call out of the compiled function", where)


def other_thread_error(shape: tuple) -> TraceError:
    """A traced function read a tensor another thread made while it was traced."""
    where = _at(user_source())
    return TraceError(f"ember.jit: a tensor (shape {shape}) made in another thread while this "
                      f"function was being traced is read{where}; the graph would keep its "
                      "value from this call as a constant (a trace records its own thread's "
                      "ops only). Hint: start threads and take their results outside the "
                      "compiled function, and pass those in as arguments", where)


def not_traceable(t: Any) -> TraceError:
    """The error for a tensor a graph cannot hold (a sparse one, such as the gradient of
    ``nn.Embedding(sparse=True)``)."""
    return TraceError(f"ember.jit: a {getattr(t, 'layout', type(t).__name__)!r} tensor "
                      f"(shape {tuple(getattr(t, 'shape', ()))}) cannot be traced: compiled "
                      f"graphs hold dense tensors only{_at(user_source())}. Hint: use "
                      "nn.Embedding(sparse=False) (or embedding(..., sparse=False)) in a "
                      "compiled step, or run this step eagerly")


def warn_user(message: str) -> None:
    """``warnings.warn(message)`` at the innermost frame outside Ember's own code (the user's
    line that called the compiled function), once per line as ``warn`` does."""
    frame = sys._getframe(1)
    while frame is not None and _is_ember_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, stacklevel=2)
        return
    scope = frame.f_globals
    warnings.warn_explicit(message, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           scope.get("__name__") or "<string>",
                           scope.setdefault("__warningregistry__", {}))
