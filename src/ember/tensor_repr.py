"""``repr(tensor)`` in PyTorch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, GradError

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
             "sci_mode": None}
_PROFILES = {"default": {},
             "short": {"precision": 2, "edgeitems": 2},
             "full": {"threshold": sys.maxsize}}
OPTIONS: dict[str, Any] = dict(_DEFAULTS)


def set_printoptions(precision: int | None = None, threshold: int | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Sets how tensors print, as ``torch.set_printoptions``: digits after the point
    (``precision``), the size past which a tensor is summarised (``threshold``) with
    ``edgeitems`` items at each end, the line width, and scientific notation (``sci_mode``:
    True, False, or None to choose). ``profile`` ("default", "short", "full") first resets
    them all to a preset. The defaults are PyTorch's (4 digits, 1000, 3, 80 columns).

    Example:
        >>> ember.set_printoptions(precision=2)
        >>> ember.tensor([1.23456])
        tensor([1.23])
        >>> ember.set_printoptions(profile="default")
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ArgumentError(f"set_printoptions: unknown profile {profile!r}; expected one of "
                                f"{sorted(_PROFILES)}")
        OPTIONS.update(_DEFAULTS, **_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}
    OPTIONS.update({k: v for k, v in given.items() if v is not None})
    OPTIONS["sci_mode"] = sci_mode


class _Formatter:
    """PyTorch's choice of one notation and width for every element printed: for floats,
    scientific when the nonzero finite magnitudes span more than 1e3, pass 1e8 or go below
    1e-4 (unless ``sci_mode`` says), else integral values as ``2.`` and the rest with
    ``precision`` decimals; the width is the widest nonzero finite value's."""

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating, self.int_mode, self.sci_mode, self.width = floating, True, False, 1
        if not floating:
            self.width = max((len(str(v)) for v in values.reshape(-1).tolist()), default=1)
            return
        finite = values[np.isfinite(values) & (values != 0)].astype(np.float64)
        if not finite.size:  # (zeros, inf and nan alone print as 0., inf, nan)
            return
        big, small = np.abs(finite).max(), np.abs(finite).min()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        sci = OPTIONS["sci_mode"]
        self.sci_mode = (big / small > 1e3 or big > 1e8 or small < 1e-4) if sci is None else sci
        self.width = max(len(self._text(v)) for v in finite.tolist())

    def _text(self, v: Any) -> str:
        if not self.floating:
            return str(v)
        if self.sci_mode:
            return f"{v:.{OPTIONS['precision']}e}"
        if self.int_mode:
            return f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        return f"{v:.{OPTIONS['precision']}f}"

    def format(self, v: Any) -> str:
        return self._text(v).rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex format: the real parts and the imaginary parts each get their own
    :class:`_Formatter`; an element prints as ``1.5000+2.j``. Its width, which only sets how
    many elements share a line, counts the ``j`` but not the sign between the parts, as
    PyTorch's does."""

    def __init__(self, values: np.ndarray) -> None:
        self.real, self.imag = _Formatter(values.real, True), _Formatter(values.imag, True)
        self.width = self.real.width + self.imag.width + 1

    def format(self, v: complex) -> str:
        imag = (self.imag.format(v.imag) + "j").lstrip()
        return self.real.format(v.real) + ("" if imag[0] in "+-" else "+") + imag


def _items(a: np.ndarray) -> Any:
    """``a.tolist()``, floats as Python floats (bfloat16 and float16 too)."""
    return (a.astype(np.float64) if a.dtype.kind in "fV" else a).tolist()


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (``edgeitems`` at each end of each dimension),
    from which the format is chosen, as torch's ``get_summarized_data``."""
    edge = OPTIONS["edgeitems"]
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return a[(slice(0, 0),) * a.ndim]
    n = a.shape[0]
    rows = [*range(edge), *range(n - edge, n)] if n > 2 * edge else range(n)
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter,
                width: int) -> str:
    per_line = max(1, (width - indent) // (fmt.width + 2))
    edge = OPTIONS["edgeitems"]
    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = ([fmt.format(v) for v in _items(a[:edge])] + [" ..."]
                + [fmt.format(v) for v in _items(a[-edge:])])
    else:
        data = [fmt.format(v) for v in _items(a)]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter,
                width: int) -> str:
    """torch's ``_tensor_str_with_formatter``: rows (wrapped at ``width`` columns), blank
    lines between blocks."""
    if a.ndim == 0:
        return fmt.format(_items(a))
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt, width)
    edge, n = OPTIONS["edgeitems"], a.shape[0]
    rows = [*range(edge), None, *range(n - edge, n)] if summarize and n > 2 * edge else range(n)
    slices = ["..." if i is None else _nested_str(a[i], indent + 1, summarize, fmt, width)
              for i in rows]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def add_suffixes(text: str, suffixes: list[str], indent: int, width: int | None = None,
                 newline: bool = False) -> str:
    """Appends ``, dtype=...`` and the like, each on a new line where it would pass the line
    width (``linewidth`` unless ``width``), the first one on a new line with ``newline``, as
    torch's ``_add_suffixes``."""
    width = OPTIONS["linewidth"] if width is None else width
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for i, suffix in enumerate(suffixes):
        if (newline and not i) or last + len(suffix) + 2 > width:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def has_default_dtype(dt: dtypes.DType) -> bool:
    """Whether a (non-empty) tensor's repr leaves its dtype out, as PyTorch's: the default
    float dtype, its complex twin, int64 and bool."""
    default = dtypes.get_default_dtype()
    return dt in (default, default.to_complex(), dtypes.int64, dtypes.bool_)


def _tangent(t: Any) -> Any:
    """``t``'s forward-AD tangent at the innermost dual level, or None (as PyTorch prints it:
    ``tensor([1., 2.], tangent=tensor([1., 1.]))``)."""
    from ember.autograd.forward_ad import unpack_dual  # (it builds on the ops)

    return unpack_dual(t).tangent


def _prefix(cls: type) -> str:
    """``MyTensor(`` for a user's subclass of Tensor that prints as a tensor, as PyTorch's;
    ``tensor(`` for Tensor and Ember's own kinds (a parameter wraps it in its own text)."""
    from ember.tensor import Tensor  # (it imports this module when printing)

    plain = cls.__module__.split(".")[0] == "ember" or cls.__repr__ is not Tensor.__repr__
    return "tensor(" if plain else f"{cls.__name__}("


def tensor_repr(t: Any, part: bool = False, width: int | None = None) -> str:
    """The text ``repr`` shows for a tensor (summarised past ``threshold`` elements, rows
    wrapped at ``width`` columns, default ``linewidth``); as a sparse tensor's ``part``, as
    PyTorch prints those: no dtype or device (the sparse tensor names them), and the size of
    an empty one always."""
    dt, prefix = t.dtype, _prefix(type(t))
    suffixes = [f"device='{t.device}'"] if t.device.type != "cpu" and not part else []
    if t.device.is_meta:  # (no values to show: PyTorch's "...", and the size)
        data = None
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
        shown = dt is not dtypes.get_default_dtype()  # (no values to tell an int64 by)
    elif (data := t._data if t.device.type == "cpu" else t.numpy(force=True)).size == 0:
        body = "[]"
        if data.ndim != 1 or part:
            suffixes.append(f"size={tuple(t.shape)}")
        shown = dt is not dtypes.get_default_dtype()
    else:
        summarize = data.size > OPTIONS["threshold"]
        shown_data = _summarized(data) if summarize else data
        fmt = _ComplexFormatter(shown_data) if dt.is_complex else \
            _Formatter(shown_data, dt.is_floating_point)
        body = _nested_str(data, len(prefix), summarize, fmt,
                           OPTIONS["linewidth"] if width is None else width)
        if not OPTIONS["edgeitems"]:
            suffixes.append(f"size={tuple(t.shape)}")
        shown = not has_default_dtype(dt)
    if shown and not part:
        suffixes.append(f"dtype=ember.{dt.name}")
    try:
        node = t.grad_fn  # (a view whose base was written in place: of its new history)
        node = None if node is None else node.name()
    except GradError:  # (a custom Function's view output whose base was written, as PyTorch)
        node = "Invalid"
    if node is not None:
        suffixes.append(f"grad_fn=<{node}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    if not part and (tangent := _tangent(t)) is not None:
        suffixes.append(f"tangent={tangent}")  # (a 0-d one as its number, as torch)
    return add_suffixes(prefix + body, suffixes, len(prefix))
