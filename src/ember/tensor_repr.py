"""``repr(tensor)`` in PyTorch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes


def _float_format(values: np.ndarray) -> Any:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: f"{v}"
    if np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        width = max(len(f"{v:.0f}.") for v in finite)
        return lambda v: f"{v:.0f}.".rjust(width) if np.isfinite(v) else f"{v}".rjust(width)
    big, small = np.abs(finite).max(), np.abs(finite[finite != 0]).min(initial=1.0)
    fmt = "{:.4e}" if big >= 1e8 or small < 1e-4 or big / small > 1e3 else "{:.4f}"
    width = max(len(fmt.format(v)) for v in finite)
    return lambda v: fmt.format(v).rjust(width) if np.isfinite(v) else f"{v}".rjust(width)


def tensor_repr(t: Any) -> str:
    """The text ``repr`` shows for a tensor (summarised past 1000 elements)."""
    data = t._data if t.device.type == "cpu" else t.numpy(force=True)
    dt = t.dtype
    if dt is dtypes.bfloat16 or dt is dtypes.float16:
        data = data.astype(np.float32)
    fmt = {}
    if dt.is_floating_point and data.size:
        fmt["float_kind"] = _float_format(data)
    body = np.array2string(data, separator=", ", prefix="tensor(", formatter=fmt or None,
                           threshold=1000, edgeitems=3, max_line_width=100)
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
