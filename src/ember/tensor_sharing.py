"""Tensors sent to another process share their memory with it, as PyTorch's do: whatever
``multiprocessing`` pickles with its ``ForkingPickler`` (a ``Queue``, a ``Pipe``, the arguments
of a process started with ``spawn`` or ``forkserver``) moves into shared memory
(``share_memory_()``, in place) and travels as a duplicate of that memory's file descriptor, so
that writes on either side show on the other (Hogwild training, a model a pool of processes
reads). The receiver's tensor is a leaf with the sender's ``requires_grad``, strides and
attributes; a ``Parameter`` arrives as a ``Parameter``.

A view of memory that is not shared yet cannot move (the tensors it views would keep the old
memory), so it travels as a shared copy of its values; a tensor with history (a non-leaf that
requires grad) is refused, as autograd does not cross processes; other devices' tensors and
plain ``pickle`` copy the values as before.
"""

from __future__ import annotations

from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

from ember.backend import shared_block
from ember.errors import GradError, OpError
from ember.hooks import warn_if_has_hooks
from ember.tensor import Tensor
from ember.tensor_copy import own_attributes, rebuilt

__all__ = ["reduce_shared"]


class _Block:
    """Pickles as a duplicate of a shared block's descriptor; unpickles as the block, mapped
    in the receiving process."""

    def __init__(self, block: shared_block.SharedBlock) -> None:
        self.block = block

    def __reduce__(self) -> tuple:
        return _attached, (DupFd(self.block.fd), len(self.block))


def _attached(fd: Any, nbytes: int) -> shared_block.SharedBlock:
    return shared_block.attach(fd.detach(), nbytes)


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
        if shared_block.block_of(t._data) is None:  # (a view; a DataLoader batch's memory)
            source = t.detach().clone().share_memory_()
    a = source._data
    block = shared_block.block_of(a)
    layout = (a.dtype, a.shape, a.strides, shared_block.offset_in(a, block))
    return rebuilt, (_Block(block), "cpu", t.requires_grad, layout, type(t), own_attributes(t))


ForkingPickler.register(Tensor, reduce_shared)
