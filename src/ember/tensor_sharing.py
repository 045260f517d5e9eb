"""Tensors sent to another process share their memory with it, as PyTorch's do: whatever
``multiprocessing`` pickles with its ``ForkingPickler`` (a ``Queue``, a ``Pipe``, the arguments
of a process started with ``spawn`` or ``forkserver``) moves into shared memory
(``share_memory_()``, in place) and travels as a duplicate of that memory's file descriptor, so
that writes on either side show on the other (Hogwild training, a model a pool of processes
reads). The receiver's tensor is a leaf with the sender's ``requires_grad``, strides and
attributes; a ``Parameter`` arrives as a ``Parameter``, a subclass of ``Tensor`` that pickles as a
tensor (no ``__reduce__`` of its own) as itself.

The whole memory block moves, with the tensors on it (a view sent moves its base too, as PyTorch
moves the storage); a tensor with history (a non-leaf that requires grad) is refused, as
autograd does not cross processes; other devices' tensors and plain ``pickle`` copy the values
as before.
"""

from __future__ import annotations

import weakref
from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

import numpy as np

from ember.backend import shared_block
from ember.errors import GradError, OpError
from ember.hooks import warn_if_has_hooks
from ember.tensor import SUBCLASS_HOOKS, Tensor
from ember.tensor_copy import own_attributes, rebuilt

__all__ = ["reduce_shared"]


class _Block:
    """Pickles as a duplicate of a shared block's descriptor; unpickles as the block, mapped
    in the receiving process."""

    def __init__(self, block: shared_block.SharedBlock) -> None:
        self.block = block

    def __reduce__(self) -> tuple:
        return _attached, (DupFd(self.block.fd), len(self.block))


_pickling: weakref.WeakValueDictionary[int, _Block] = weakref.WeakValueDictionary()


def _sent(block: shared_block.SharedBlock) -> _Block:
    """One ``_Block`` per block while a pickle holds it, so that the tensors of one block in
    one message share one descriptor (``spawn`` refuses a descriptor passed twice)."""
    found = _pickling.get(id(block))  # (a live _Block keeps its block, so the id is its own)
    if found is None:
        found = _pickling[id(block)] = _Block(block)
    return found


def _attached(fd: Any, nbytes: int) -> np.ndarray:
    """The bytes of the block (as one array: the storage of the tensors made on it)."""
    return np.frombuffer(shared_block.attach(fd.detach(), nbytes), np.uint8)


def reduce_shared(t: Tensor) -> tuple:
    """``ForkingPickler``'s reduction of a tensor: its shared memory block (it moves there
    first if it is not shared) and where the tensor lies in it."""
    if t._node is not None:
        raise GradError("Cowardly refusing to send a tensor with history (a non-leaf that "
                        "requires grad) to another process: autograd does not cross process "
                        "boundaries. Hint: send tensor.detach() to transfer the values")
    if t._device.type != "cpu":
        return t.__reduce__()
    warn_if_has_hooks(t)
    source = t
    if shared_block.block_of(t._data) is None:
        try:
            t.share_memory_()
        except OpError:
            pass
        if shared_block.block_of(t._data) is None:  # (odd memory; a DataLoader batch's,
            # shared already but not by a descriptor)
            source = t.detach().clone().share_memory_()
    a = source._data
    block = shared_block.block_of(a)
    layout = (a.dtype, a.shape, a.strides, shared_block.offset_in(a, block))
    return rebuilt if a.flags.writeable else _rebuilt_read_only, \
        (_sent(block), "cpu", t.requires_grad, layout, type(t), own_attributes(t))


def _rebuilt_read_only(*args: Any) -> Tensor:
    """:func:`rebuilt` of a read-only tensor (an ``as_strided`` view): read-only here too."""
    t = rebuilt(*args)
    t._data.flags.writeable = False
    return t


def _register(cls: type) -> None:
    """Registers a subclass that pickles as a tensor does (``ForkingPickler`` looks its
    reductions up by exact class; PyTorch's subclasses share through their storage's)."""
    if cls.__reduce__ is Tensor.__reduce__ and cls.__reduce_ex__ is Tensor.__reduce_ex__:
        ForkingPickler.register(cls, reduce_shared)


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


ForkingPickler.register(Tensor, reduce_shared)
SUBCLASS_HOOKS.append(_register)
for _cls in _subclasses(Tensor):  # (those made before this module: nn.Buffer, ...)
    _register(_cls)
