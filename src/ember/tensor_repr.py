"""``repr(tensor)`` in PyTorch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ember import dtypes

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 100,
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
    them all to a preset. Ember's default line width is 100 (PyTorch's 80).

    Example:
        >>> ember.set_printoptions(precision=2)
        >>> ember.tensor([1.23456])
        tensor([1.23])
        >>> ember.set_printoptions(profile="default")
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; expected one of "
                             f"{sorted(_PROFILES)}")
        OPTIONS.update(_DEFAULTS, **_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}
    OPTIONS.update({k: v for k, v in given.items() if v is not None})
    OPTIONS["sci_mode"] = sci_mode


def _float_format(values: np.ndarray) -> Any:
    """PyTorch's choice: scientific notation when the nonzero magnitudes span more than 1e3 or
    pass 1e8 (or, for non-integral values, go below 1e-4), unless ``sci_mode`` says;
    otherwise integral values as ``2.`` and the rest with ``precision`` decimals."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: f"{v}"
    nonzero = np.abs(finite[finite != 0])
    integral = bool(np.all(finite == np.round(finite)))
    big, small = (nonzero.max(), nonzero.min()) if nonzero.size else (0.0, 0.0)
    auto = big > 1e3 * small or big > 1e8 or (not integral and small < 1e-4)
    digits, sci = OPTIONS["precision"], OPTIONS["sci_mode"]
    if nonzero.size and (auto if sci is None else sci):  # (zeros alone print as 0.)
        fmt = f"{{:.{digits}e}}"
    else:
        fmt = "{:.0f}." if integral else f"{{:.{digits}f}}"
    width = max(len(fmt.format(v)) for v in finite)
    return lambda v: fmt.format(v).rjust(width) if np.isfinite(v) else f"{v}".rjust(width)


def tensor_repr(t: Any) -> str:
    """The text ``repr`` shows for a tensor (summarised past ``threshold`` elements)."""
    data = t._data if t.device.type == "cpu" else t.numpy(force=True)
    dt = t.dtype
    if dt is dtypes.bfloat16 or dt is dtypes.float16:
        data = data.astype(np.float32)
    fmt = {}
    if dt.is_floating_point and data.size:
        fmt["float_kind"] = _float_format(data)
    body = np.array2string(data, separator=", ", prefix="tensor(", formatter=fmt or None,
                           threshold=OPTIONS["threshold"], edgeitems=OPTIONS["edgeitems"],
                           max_line_width=OPTIONS["linewidth"])
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    implied = (dtypes.get_default_dtype(),) + ((dtypes.int64, dtypes.bool_) if data.size else ())
    if dt not in implied:
        extras.append(f"dtype=ember.{dt.name}")
    if data.size == 0 and data.ndim > 1:
        extras.insert(0, f"size={tuple(t.shape)}")
    if t._node is not None:
        extras.append(f"grad_fn=<{t._node.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
