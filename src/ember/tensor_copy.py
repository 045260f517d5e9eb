"""``deepcopy`` of tensors (:meth:`ember.Tensor.__deepcopy__`): values copied, history
dropped, and memory the originals shared shared again by the copies."""

from __future__ import annotations

import numpy as np

from ember.tensor import Tensor, _wrap

__all__ = ["copied"]


def copied(t: Tensor, memo: dict) -> Tensor:
    """A new tensor, no history, with the values of ``t`` for ``deepcopy``. As PyTorch copies a
    storage once per ``memo``, Ember copies the memory block a CPU array lives in (the array at
    the end of NumPy's ``base`` chain) once, keyed by its id, and makes ``t``'s array again at
    the same place in the copy: tensors copied together (a tensor, its slices, its
    ``view(dtype)``) share the copy's memory and version counter as they shared theirs."""
    a = t._data
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not isinstance(a, np.ndarray) or not (root.flags.c_contiguous or root.flags.f_contiguous):
        data = memo.get(id(a))  # (another device's array, or an odd block: by array)
        if data is None:
            data = memo[id(a)] = t.detach().clone()._data
        return _wrap(data, t._device)
    copy = memo.get(id(root))
    if copy is None:
        copy = memo[id(root)] = root.copy(order="A")
    block = copy.reshape(-1, order="A").view(np.uint8)
    start = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    data = np.ndarray(a.shape, a.dtype, buffer=block, offset=start, strides=a.strides)
    key = ("ember version counter", id(root))  # (one for the tensors copied from one block)
    out = _wrap(data, t._device, vc=memo.get(key))
    memo.setdefault(key, out._vc)
    return out
