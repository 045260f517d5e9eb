"""The memory block a NumPy array lives in: the array at the end of its ``base`` chain, when
that is one dense array, and the array's byte offset in it (what ``storage_offset`` counts)."""

from __future__ import annotations

import numpy as np


def dense_root(a: np.ndarray) -> np.ndarray | None:
    """The array at the end of ``a``'s ``base`` chain, as a C- or F-contiguous array (a dense
    block in another order, e.g. a channels-last clone, transposed to C order); None where
    that block is not dense."""
    root = a
    while isinstance(root.base, np.ndarray) or isinstance(
            getattr(root.base, "base", None), np.ndarray):  # (as_strided's wrapper between)
        root = root.base if isinstance(root.base, np.ndarray) else root.base.base
    if root.flags.c_contiguous or root.flags.f_contiguous:
        return root
    dense = root.transpose(sorted(range(root.ndim), key=lambda d: -root.strides[d]))
    return dense if dense.flags.c_contiguous else None


def byte_offset(a: np.ndarray) -> int:
    """``a``'s offset in bytes from the start of its dense block (0 where the block is not
    dense: such an array is its own storage), with no copy."""
    root = dense_root(a)
    return 0 if root is None else address(a) - address(root)


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element."""
    return a.__array_interface__["data"][0]
