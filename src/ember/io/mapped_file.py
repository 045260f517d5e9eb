"""A file mapped copy-on-write for ``ember.load(..., mmap=True)`` that, as ``torch.load``'s
mapping, holds no file descriptor: Python's ``mmap`` keeps a duplicate of the file's until
the mapping goes (before Python 3.13), so thousands of mapped loads ran out of descriptors
(``ulimit -n`` 1024: the 1018th failed). Where the C library is reachable (Linux, macOS) the
file is mapped by ``mmap(2)`` itself, the descriptor closed with the file, and the mapping
unmapped when the last array over it goes; elsewhere ``numpy.memmap`` maps it.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from typing import BinaryIO

import numpy as np

from ember.errors import CheckpointError


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.munmap.restype = ctypes.c_void_p, ctypes.c_int
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int64]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, TypeError, AttributeError):  # (no C library by that name: Windows)
        return None
    return libc if hasattr(mmap, "MAP_PRIVATE") else None


_LIBC = _libc()
_FAILED = ctypes.c_void_p(-1).value


class FileMapping:
    """One mapping at ``addr`` of ``size`` bytes (an array's base through
    ``__array_interface__``): unmapped when the last array over it is gone."""

    def __init__(self, addr: int, size: int) -> None:
        self.addr, self.size, self.munmap = addr, size, _LIBC.munmap  # (kept: module globals
        # may be gone when the last array dies at interpreter exit)
        self.__array_interface__ = {"data": (addr, False), "shape": (size,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self) -> None:
        self.munmap(self.addr, self.size)


def map_file(f: BinaryIO, where: str) -> np.ndarray:
    """The whole (non-empty) file ``f`` as a writable uint8 array over its pages, mapped
    copy-on-write (writes stay in memory), as ``torch.load(mmap=True)`` maps a file; one that
    cannot be mapped is a :class:`CheckpointError` naming it (``where``)."""
    try:
        if _LIBC is None:
            return np.memmap(f, np.uint8, "c").view(np.ndarray)  # (a plain array: memmap's
            # Python hooks cost on every NumPy op)
        size = os.fstat(f.fileno()).st_size
        addr = _LIBC.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE,
                          f.fileno(), 0)
        if addr is None or addr == _FAILED:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{where}: cannot map the file ({e}); hint: load it with "
                              "mmap=False") from None
    return np.asarray(FileMapping(addr, size))
