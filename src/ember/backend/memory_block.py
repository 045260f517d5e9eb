"""The memory block a NumPy array lives in: the array at the end of its ``base`` chain, when
that is one dense array, and the array's byte offset in it (what ``storage_offset`` counts).
An array :func:`own_block` made (``from_numpy``'s) is a block of its own, as in PyTorch."""

from __future__ import annotations

import numpy as np


def dense_root(a: np.ndarray) -> np.ndarray | None:
    """The array at the end of ``a``'s ``base`` chain, as a C- or F-contiguous array (a dense
    block in another order, e.g. a channels-last clone, transposed to C order); None where
    that block is not dense."""
    root = a
    while type(root.base) is not _Owner and (isinstance(root.base, np.ndarray) or isinstance(
            getattr(root.base, "base", None), np.ndarray)):  # (as_strided's wrapper between)
        root = root.base if isinstance(root.base, np.ndarray) else root.base.base
    if root.flags.c_contiguous or root.flags.f_contiguous:
        return root
    dense = root.transpose(sorted(range(root.ndim), key=lambda d: -root.strides[d]))
    return dense if dense.flags.c_contiguous else None


def may_overlap(a: np.ndarray) -> bool:
    """Whether elements of array ``a`` may share memory (broadcast dimensions, of stride 0,
    aside): its dimensions, by stride, must each step past everything the smaller ones span."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return False
    span = a.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1 and s):
        if stride < span:
            return True
        span = stride * (n - 1) + span
    return False


def writable_alias(a: np.ndarray, overlapping: bool = False) -> np.ndarray | None:
    """A writable array over the memory of read-only ``a`` where only NumPy's rule made it
    read-only (every view of a broadcast array is: a row of an expanded tensor), as PyTorch
    writes there; None where ``a``'s elements share memory (unless ``overlapping``, for a
    fill of one value) or its memory itself is read-only (a buffer of bytes, a loaded file)."""
    if not isinstance(a, np.ndarray) or not overlapping and (may_overlap(a) or any(
            not s and n > 1 for s, n in zip(a.strides, a.shape))):
        return None
    root = dense_root(a)
    if root is None or not root.flags.writeable:
        return None
    try:
        return np.ndarray(a.shape, a.dtype, buffer=root, offset=address(a) - address(root),
                          strides=a.strides)
    except (ValueError, TypeError):
        return None


def byte_offset(a: np.ndarray) -> int:
    """``a``'s offset in bytes from the start of its dense block (0 where the block is not
    dense: such an array is its own storage), with no copy."""
    root = dense_root(a)
    return 0 if root is None else address(a) - address(root)


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element."""
    return a.__array_interface__["data"][0]


class _Owner:
    """The end of a base chain :func:`own_block` puts in: the bytes from an array's first
    element to its last (``base``, the array, keeps them alive)."""

    def __init__(self, a: np.ndarray, nbytes: int) -> None:
        self.base = a
        self.__array_interface__ = {"data": (address(a), not a.flags.writeable),
                                    "shape": (nbytes,), "typestr": "|u1", "version": 3}


def own_block(a: np.ndarray) -> np.ndarray:
    """``a`` over the same memory, with its storage starting at its first element and ending
    at its last (a block of its own, as ``torch.from_numpy``'s, whatever array ``a`` is a view
    of); ``a`` itself where that is its block already, or where a stride is negative."""
    if a.base is None:  # (an array owning its memory is its own block: the common case)
        return a
    span = 0 if a.size == 0 else sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize
    root = dense_root(a)
    if any(s < 0 for s in a.strides) or (
            root is not None and address(root) == address(a) and root.nbytes == span):
        return a
    block = np.asarray(_Owner(a, span))
    return np.ndarray(a.shape, a.dtype, buffer=block, strides=a.strides)
