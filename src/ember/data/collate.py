"""Merging samples into batches: :func:`default_collate` (stack tensors, arrays and numbers,
recurse into dicts, tuples, named tuples and lists, as PyTorch's) and :func:`default_convert`
(NumPy arrays to tensors, used when automatic batching is off).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import ember
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _rebuild(elem: Any, items: Any) -> Any:
    """A container of ``elem``'s type holding ``items`` (a plain one if it cannot be built)."""
    if isinstance(elem, Mapping):
        try:
            out = elem.copy() if hasattr(elem, "copy") else type(elem)()
            out.update(items)
            return out
        except TypeError:
            return dict(items)
    if _is_namedtuple(elem):
        return type(elem)(*items)
    if isinstance(elem, tuple):
        return list(items)  # PyTorch returns a list for a batch of plain tuples
    try:
        return type(elem)(items)
    except TypeError:
        return list(items)


def stack_tensors(batch: Sequence[Tensor]) -> Tensor:
    """``ember.stack(batch)``, copied row by row into one new array when no tensor records
    gradients (one NumPy ``np.stack`` costs about four times as much for small rows)."""
    for i, t in enumerate(batch):
        if not isinstance(t, Tensor):
            raise TypeError(f"default_collate: element 0 of the batch is a tensor, so every "
                            f"element should be one, but element {i} is of type "
                            f"{type(t).__name__}")
    if DISPATCH.stack or any(t.requires_grad or t.device.type != "cpu" for t in batch):
        return ember.stack(list(batch))  # (a transform, such as vmap, sees the stack)
    arrays = [t._data for t in batch]
    first = arrays[0]
    if len({a.shape for a in arrays}) > 1:
        i = next(i for i, a in enumerate(arrays) if a.shape != first.shape)
        raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, but "
                           f"got {first.shape} at entry 0 and {arrays[i].shape} at entry {i}")
    if len({a.dtype for a in arrays}) > 1:
        return ember.stack(list(batch))  # mixed dtypes: let stack promote
    if any(type(a) is not np.ndarray for a in arrays):
        # (an array subclass's guards run: an uninitialized buffer's raises, as in PyTorch)
        return ember.from_numpy(np.asarray(np.stack(arrays)))
    out = np.empty((len(arrays), *first.shape), first.dtype)
    for i, a in enumerate(arrays):
        out[i] = a
    return ember.from_numpy(out)


def default_collate(batch: Sequence[Any]) -> Any:
    """Merges a list of samples into a batch.

    Tensors are stacked along a new first dimension; NumPy arrays become stacked tensors;
    Python floats become a float64 tensor and ints an int64 tensor (bools a bool tensor);
    strings stay a list; dicts, named tuples and lists are collated field by field (a batch of
    plain tuples gives a list, as in PyTorch).

    Example:
        >>> default_collate([(ember.tensor([1.0]), 0), (ember.tensor([2.0]), 1)])
        [tensor([[1.],
                [2.]]), tensor([0, 1])]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack_tensors(batch)
    if isinstance(elem, np.ndarray | np.generic) and not isinstance(elem, np.str_ | np.bytes_):
        if elem.dtype.kind in "OSU":
            raise TypeError(_BAD.format(elem.dtype))
        if isinstance(elem, np.generic) or elem.ndim == 0:
            return ember.as_tensor(np.asarray(batch))
        return stack_tensors([ember.as_tensor(b) for b in batch])
    if isinstance(elem, bool):
        return ember.tensor(batch)
    if isinstance(elem, float):
        return ember.tensor(batch, dtype=ember.float64)
    if isinstance(elem, int):
        return ember.tensor(batch)
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return _rebuild(elem, [default_collate(s) for s in zip(*batch)])
    if isinstance(elem, numbers.Number):
        return ember.tensor(batch)
    raise TypeError(_BAD.format(type(elem)))


def default_convert(data: Any) -> Any:
    """NumPy arrays (also inside dicts, tuples and lists) become tensors; the rest (masked
    arrays too) is kept.

    Example:
        >>> default_convert({"x": np.zeros(2)})
        {'x': tensor([0., 0.], dtype=ember.float64)}
    """
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSU":
        # (a masked array is kept, as PyTorch keeps it: a tensor would lose the mask)
        return data if isinstance(data, np.ma.MaskedArray) else ember.as_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "OSU":
        return ember.as_tensor(np.asarray(data))
    if isinstance(data, Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
