"""How a MaskedTensor prints, as torch's does: nested brackets, one row per line, floats as
``{:8.4f}``, integers and bools as Python prints them, ``--`` for a masked-out element."""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOAT = "{0:8.4f}"


def _element(value: Any) -> str:
    return _FLOAT.format(value) if isinstance(value, float) else str(value)


def _nested(data: np.ndarray, mask: np.ndarray) -> str:
    if data.ndim == 1:
        texts = [_element(v) for v in data.tolist()]
        width = max((8 if not m else len(t) for t, m in zip(texts, mask)), default=0)
        return "[" + ", ".join(t if m else "--".rjust(width) for t, m in zip(texts, mask)) + "]"
    rows = ["\n".join("  " + line for line in _nested(d, m).split("\n"))
            for d, m in zip(data, mask)]
    return "[\n" + ",\n".join(rows) + "\n]"


def masked_tensor_repr(data: np.ndarray, mask: np.ndarray) -> str:
    """``MaskedTensor(...)`` for the given data and bool mask arrays of one shape."""
    if data.ndim == 0:
        text = _element(data.item()) if mask.item() else "--"
        return f"MaskedTensor({text}, {bool(mask.item())})"
    body = "\n".join("  " + line for line in _nested(data, mask).split("\n"))
    return "MaskedTensor(\n" + body + "\n)"
