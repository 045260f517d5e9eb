"""Views in an Ember checkpoint: a saved tensor whose memory lies inside another saved tensor
(a row of a weight, its transpose, a slice of a flat buffer) is stored as a view of that one
(``{"$view": name, "offset": k, "size": [...], "stride": [...]}`` in the tree, in elements),
so it loads sharing memory with it, as ``torch.load`` keeps views of one storage.

A file with views says format version 2, so an older Ember refuses it ("upgrade Ember")
rather than load the whole tensor in the view's place; files without views stay version 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import CheckpointError
from ember.tensor import Tensor


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _span(a: np.ndarray) -> tuple[int, int]:
    """[begin, end) byte addresses ``a`` reads (non-negative strides only)."""
    begin = a.__array_interface__["data"][0]
    last = sum((n - 1) * s for n, s in zip(a.shape, a.strides))
    return begin, begin + last + a.itemsize


def _steps(a: np.ndarray) -> list[int]:
    """``a``'s strides in bytes, 0 for a dimension of size 1 (whose stride is never used)."""
    return [s if n > 1 else 0 for n, s in zip(a.shape, a.strides)]


def link_views(arrays: dict[str, np.ndarray], nodes: dict[str, list[dict]]) -> bool:
    """Turns each tensor of ``nodes`` (name -> its tree nodes) whose array lies inside a
    contiguous other one of the same dtype and device into a view of it, dropping its array
    from ``arrays``; returns whether any did. Expanded tensors (a stride 0) and complex128
    ones (stored as their real view) stay copies."""
    groups: dict[tuple, list[str]] = {}
    for name, found in nodes.items():
        a = arrays[name]
        if (a.size and not found[0].get("complex")  # (expanded ones stay copies, as before)
                and all(s > 0 or n == 1 for n, s in zip(a.shape, a.strides))):
            key = (id(_owner(a)), a.dtype.str, found[0].get("device", "cpu"))
            groups.setdefault(key, []).append(name)
    linked = False
    for names in groups.values():
        roots: list[str] = []  # contiguous arrays no larger one contains, largest first
        for name in sorted(names, key=lambda n: (-arrays[n].nbytes,
                                                 not arrays[n].flags.c_contiguous, n)):
            a = arrays[name]
            begin, end = _span(a)
            root = next((r for r in roots if _span(arrays[r])[0] <= begin
                         and end <= _span(arrays[r])[1]
                         and (begin - _span(arrays[r])[0]) % a.itemsize == 0
                         and all(s % a.itemsize == 0 for s in _steps(a))), None)
            if root is None:
                if a.flags.c_contiguous:
                    roots.append(name)
                continue
            view = {"$view": root, "offset": (begin - _span(arrays[root])[0]) // a.itemsize,
                    "size": list(a.shape), "stride": [s // a.itemsize for s in _steps(a)]}
            for node in nodes[name]:
                del node["$tensor"]
                node.update(view)
            del arrays[name]
            linked = True
    return linked


def view_of(base: Tensor, node: dict, where: str) -> Tensor:
    """The view a ``$view`` ``node`` describes of ``base`` (the tensor it names, as loaded)."""
    offset, size, stride = node.get("offset"), node.get("size"), node.get("stride")
    if not (type(offset) is int and isinstance(size, list) and isinstance(stride, list)
            and len(size) == len(stride) and offset >= 0
            and all(type(v) is int and v >= 0 for v in size + stride)):
        raise CheckpointError(f"{where}: malformed view entry of {node['$view']!r} (offset "
                              f"{offset!r}, size {size!r}, stride {stride!r})")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if 0 not in size and last >= base.numel():
        raise CheckpointError(f"{where}: a view of {node['$view']!r} (size {size}, stride "
                              f"{stride}, offset {offset}) reads past its {base.numel()} "
                              "elements; the file is corrupted")
    return base.as_strided(size, stride, offset)


def view_key(node: dict) -> Any:
    """What tells apart the views of one tensor (None for the tensor itself)."""
    return None if "$view" not in node else repr((node.get("offset"), node.get("size"),
                                                  node.get("stride")))
