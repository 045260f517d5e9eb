"""Shared memory blocks with a file descriptor: what ``share_memory_()`` puts a tensor in, so
that a process forked afterwards shares it, and any other process (``spawn``, a ``Queue``) can
map it from a duplicate of the descriptor, as PyTorch's ``file_descriptor`` strategy does.

A block is an anonymous memory file (``memfd``; an unlinked temporary file where the system has
none) mapped shared; it lives while any process maps it or holds its descriptor, so nothing is
left behind when a process dies. A process maps each file once: a descriptor of a file it has
mapped already gives that block, so tensors received one by one still share their memory.
"""

from __future__ import annotations

import mmap
import os
import sys
import tempfile
import threading
import weakref

import numpy as np

__all__ = ["SharedBlock", "attach", "block_of", "new_block", "offset_in"]


class SharedBlock(mmap.mmap):
    """A shared mapping of a whole memory file; ``fd`` is its descriptor (closed with it)."""

    fd: int


_mapped: weakref.WeakValueDictionary[tuple[int, int], SharedBlock] = \
    weakref.WeakValueDictionary()  # the blocks mapped here, by (device, inode) of the file
# held while a file is looked up and mapped: _map recognises mmap's duplicate descriptor by
# its number and file, which another thread mapping the same file (a block received twice)
# could take in between; a lock costs nothing next to a mapping
_lock = threading.Lock()
# (a fork waits for a mapping to end: a child must not inherit it held by a thread it lacks;
# storage's lock, taken before this one by its holder, is taken first at a fork too)
os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release,
                    after_in_child=_lock.release)


def _map(fd: int, nbytes: int) -> SharedBlock:
    """Maps the file ``fd`` (a descriptor this call takes over; under ``_lock``). The block
    keeps one descriptor, as a PyTorch storage does: CPython's ``mmap`` keeps a duplicate of
    ``fd`` for itself (until Python 3.13's ``trackfd=False``), which becomes the block's where
    it can be found, so ``fd`` is closed; else the block keeps both. (Two descriptors a block
    would halve the tensors a process can hold under the usual 1024 ``ulimit -n``: ~500.)"""
    info = os.fstat(fd)
    if sys.version_info >= (3, 13):
        block = SharedBlock(fd, nbytes, trackfd=False)
        block.fd = fd
        weakref.finalize(block, os.close, fd)
    else:
        free = os.dup(fd)  # (the number mmap's duplicate takes, unless a thread takes it first)
        os.close(free)
        block = SharedBlock(fd, nbytes)
        if _same_file(free, info):
            os.close(fd)
            block.fd = free  # (mmap closes it with the mapping)
        else:
            block.fd = fd
            weakref.finalize(block, os.close, fd)
    _mapped[info.st_dev, info.st_ino] = block
    return block


def _same_file(fd: int, info: os.stat_result) -> bool:
    try:
        other = os.fstat(fd)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


def new_block(nbytes: int) -> SharedBlock:
    """A new zero-filled block of ``nbytes`` bytes (at least one: a mapping cannot be empty).

    Example:
        >>> block = new_block(16)
        >>> len(block), block.fd >= 0
        (16, True)
    """
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
    else:
        with tempfile.TemporaryFile() as f:  # (unlinked already: only descriptors reach it)
            fd = os.dup(f.fileno())
    nbytes = max(nbytes, 1)
    try:
        os.ftruncate(fd, nbytes)
    except OSError:
        os.close(fd)
        raise
    with _lock:
        return _map(fd, nbytes)


def attach(fd: int, nbytes: int) -> SharedBlock:
    """The block of the memory file ``fd`` (a descriptor this call takes over): the one this
    process has mapped already, else a new mapping of its ``nbytes`` bytes."""
    info = os.fstat(fd)
    with _lock:
        found = _mapped.get((info.st_dev, info.st_ino))
        if found is not None:
            if fd != found.fd:  # (spawn hands a child the same descriptor for each view sent)
                os.close(fd)
            return found
        return _map(fd, nbytes)


def block_of(array: np.ndarray) -> SharedBlock | None:
    """The shared block ``array``'s memory lies in (through its ``base`` chain), or None."""
    a = array
    while isinstance(a, np.ndarray | memoryview):
        a = a.obj if isinstance(a, memoryview) else a.base
    return a if isinstance(a, SharedBlock) else None


def offset_in(array: np.ndarray, block: SharedBlock) -> int:
    """Where ``array``'s first element lies in ``block``, in bytes."""
    start = np.frombuffer(block, np.uint8).__array_interface__["data"][0]
    return array.__array_interface__["data"][0] - start
