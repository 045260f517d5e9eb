"""Moving batches from worker processes to the main process through shared memory.

A worker copies every array of a batch into one POSIX shared-memory segment (a file under
``/dev/shm``) and sends only a small description (offsets, shapes, dtypes) through its queue.
The main process maps the segment and unlinks its name at once, so the memory lives exactly
as long as the batch's tensors use it, and nothing is left behind if a process dies after
that point. Segment names carry the main process id and a per-iterator tag, so an iterator
that shuts down early removes the segments still in flight.

Where ``/dev/shm`` does not exist, the arrays travel pickled through the queue instead.
"""

from __future__ import annotations

import glob
import math
import mmap
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ember.backend import shared_block
from ember.data.collate import rebuild
from ember.errors import GradError
from ember.tensor import Tensor
from ember.tensor_copy import pickled, rebuilt

SHM_DIR = "/dev/shm"
_ALIGN = 64


class Slot:
    """Stands for one array of a batch: where its bytes lie in the segment (or the array
    itself), and for a tensor the rest of what rebuilds it (strides, class, attributes,
    ``requires_grad``: :func:`ember.tensor_copy.rebuilt`'s arguments after the bytes)."""

    __slots__ = ("offset", "shape", "dtype", "inline", "tensor")

    def __init__(self, offset: int, shape: tuple, dtype: np.dtype,
                 inline: np.ndarray | None = None, tensor: tuple | None = None) -> None:
        self.offset = offset
        self.shape = shape
        self.dtype = dtype
        self.inline = inline
        self.tensor = tensor

    def __getstate__(self) -> tuple:
        return (self.offset, self.shape, self.dtype, self.inline, self.tensor)

    def __setstate__(self, state: tuple) -> None:
        self.offset, self.shape, self.dtype, self.inline, self.tensor = state


class Packed:
    """A batch whose arrays are replaced by :class:`Slot` s, and the segment holding them."""

    __slots__ = ("tree", "name", "size")

    def __init__(self, tree: Any, name: str | None, size: int) -> None:
        self.tree, self.name, self.size = tree, name, size

    def __getstate__(self) -> tuple:
        return (self.tree, self.name, self.size)

    def __setstate__(self, state: tuple) -> None:
        self.tree, self.name, self.size = state


def shared_memory_available() -> bool:
    return os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


def _map(data: Any, fn: Any) -> Any:
    """Applies ``fn`` to every leaf of nested dicts, lists, tuples and named tuples (their
    types kept, subclasses too)."""
    if isinstance(data, Mapping):
        return rebuild(data, {k: _map(v, fn) for k, v in data.items()})
    if isinstance(data, list) or isinstance(data, tuple) and hasattr(data, "_fields"):
        return rebuild(data, [_map(d, fn) for d in data])
    if isinstance(data, tuple):
        return type(data)(_map(d, fn) for d in data)
    return fn(data)


def _tensor_parts(t: Tensor) -> tuple[np.ndarray, tuple] | None:
    """The bytes of ``t`` to copy and the rest of :func:`rebuilt`'s arguments, as a pickle
    keeps them (strides, class, attributes: a transposed or expanded tensor, a ``Parameter``
    or a subclass arrives as it was sent, as PyTorch's); None for a meta tensor or a subclass
    with its own ``__reduce__`` (pickled as it asks). A tensor with gaps between its elements
    (a strided slice, a column) is made dense first, so the rows between are not copied."""
    a = t._data
    if (type(t) is Tensor and isinstance(a, np.ndarray) and a.flags.c_contiguous
            and t._device.type == "cpu" and not getattr(t, "__dict__", None)):
        return a, ("cpu", t.requires_grad)  # (the common case, without pickled's look-ups)
    cls = type(t)
    if cls.__reduce__ is not Tensor.__reduce__ or cls.__reduce_ex__ is not Tensor.__reduce_ex__:
        return None  # (a subclass that pickles its own way)
    _, (span, device, grad, layout, cls, attributes) = pickled(t)
    if layout is None:
        return None
    dtype, shape, strides, offset = layout
    if len(span) > math.prod(shape) * dtype.itemsize:
        dense = np.ascontiguousarray(np.ndarray(shape, dtype, buffer=span, offset=offset,
                                                strides=strides))
        span, layout = dense.reshape(-1).view(np.uint8), (dtype, shape, dense.strides, 0)
    return span, (device, grad, layout, cls, attributes)


def pack(batch: Any, name: str, use_shm: bool) -> Packed:
    """Copies the batch's arrays into a new segment ``name`` (in a worker)."""
    arrays: list[tuple[Slot, np.ndarray]] = []
    end = 0
    slots: dict[int, tuple] = {}  # (a tensor met twice is one slot: it arrives as one tensor;
    # the leaf is kept, as pickle's memo keeps it, so that a leaf made on the fly and freed,
    # a lazy Mapping's value, cannot pass its id on to the next and take its slot)

    def to_slot(leaf: Any) -> Any:
        memo = slots.get(id(leaf))
        if memo is None:
            memo = slots[id(leaf)] = (leaf, new_slot(leaf))
        return memo[1]

    def new_slot(leaf: Any) -> Any:
        nonlocal end
        tensor = None
        if isinstance(leaf, Tensor):
            if leaf.requires_grad and not leaf.is_leaf:
                raise GradError("DataLoader worker: a batch holds a tensor that requires grad "
                                "and is the result of an op; autograd does not cross "
                                "processes. Hint: detach() it in the dataset or collate_fn")
            parts = _tensor_parts(leaf)
            if parts is None:
                return leaf  # (pickled)
            array, tensor = parts
        elif type(leaf) is np.ndarray and leaf.dtype.kind not in "OSU":
            array = leaf  # (a subclass, such as a masked array, is pickled)
        else:
            return leaf
        if not use_shm:
            inline = array if array.flags.c_contiguous else array.copy()  # (0-d stays 0-d)
            return Slot(0, array.shape, array.dtype, inline, tensor)
        slot = Slot(end, array.shape, array.dtype, tensor=tensor)
        end += -(-array.nbytes // _ALIGN) * _ALIGN
        arrays.append((slot, array))
        return slot

    tree = _map(batch, to_slot)
    if not arrays:
        return Packed(tree, None, 0)
    size = max(end, _ALIGN)
    fd = os.open(os.path.join(SHM_DIR, name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)
        buf = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    for slot, array in arrays:
        np.ndarray(slot.shape, slot.dtype, buffer=buf, offset=slot.offset)[...] = array
    buf.close()
    return Packed(tree, name, size)


def unpack(packed: Packed) -> Any:
    """The batch, its arrays backed by the segment, whose name is removed (main process)."""
    if packed.name is None:
        buf = None
    else:
        path = os.path.join(SHM_DIR, packed.name)
        fd = os.open(path, os.O_RDWR)
        try:  # (a block keeps the descriptor: the batch can be sent on, sharing its memory)
            buf = shared_block.attach(fd, packed.size)
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(path)

    made: dict[int, tuple] = {}  # (the slot kept beside its value, as in pack)

    def from_slot(leaf: Any) -> Any:
        if not isinstance(leaf, Slot):
            return leaf
        memo = made.get(id(leaf))
        if memo is None:
            memo = made[id(leaf)] = (leaf, from_new_slot(leaf))
        return memo[1]

    def from_new_slot(leaf: Slot) -> Any:
        if leaf.inline is not None:
            array = leaf.inline
        else:
            array = np.ndarray(leaf.shape, leaf.dtype, buffer=buf, offset=leaf.offset)
        return array if leaf.tensor is None else rebuilt(array, *leaf.tensor)

    return _map(packed.tree, from_slot)


def release(packed: Any) -> None:
    """Frees the segment of a batch that will not be used."""
    if isinstance(packed, Packed) and packed.name is not None:
        try:
            os.unlink(os.path.join(SHM_DIR, packed.name))
        except FileNotFoundError:
            pass


def remove_leftovers(prefix: str) -> None:
    """Unlinks segments named ``prefix*`` (those of a worker killed while writing one)."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "*")):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
