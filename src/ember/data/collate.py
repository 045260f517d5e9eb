"""Merging samples into batches: :func:`default_collate` (stack tensors, arrays and numbers,
recurse into dicts, tuples, named tuples and lists, as PyTorch's) and :func:`default_convert`
(NumPy arrays to tensors, used when automatic batching is off).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any

import numpy as np

import ember
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def rebuild(elem: Any, items: Any) -> Any:
    """A container of ``elem``'s type holding ``items`` (a dict, or a list of the values, in
    sequence order): a mutable one is a shallow copy of ``elem`` with the items put in (so a
    dict subclass keeps its type and attributes), an immutable one ``type(elem)(items)``; a
    plain dict or list when that fails. Plain tuples give a list, as in PyTorch."""
    if type(elem) is dict or type(elem) is list:  # (the common case: no copy needed)
        return items
    try:
        if isinstance(elem, MutableMapping):
            out = copy.copy(elem)
            out.update(items)
            return out
        if isinstance(elem, Mapping):
            return type(elem)(items)
        if _is_namedtuple(elem):
            return type(elem)(*items)
        if isinstance(elem, tuple):
            return list(items)
        if isinstance(elem, MutableSequence):
            out = copy.copy(elem)
            for i, item in enumerate(items):
                out[i] = item
            return out
        return type(elem)(items)
    except TypeError:
        return dict(items) if isinstance(elem, Mapping) else list(items)


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


def collate_tensor_fn(batch: Sequence[Tensor], *, collate_fn_map: dict | None = None) -> Tensor:
    """Tensors stacked along a new first dimension."""
    return stack_tensors(batch)


def collate_numpy_array_fn(batch: Sequence[np.ndarray], *,
                           collate_fn_map: dict | None = None) -> Any:
    """NumPy arrays as tensors, collated as tensors are (strings and objects refused)."""
    if batch[0].dtype.kind in "OSU":
        raise TypeError(_BAD.format(batch[0].dtype))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Sequence[np.generic], *,
                            collate_fn_map: dict | None = None) -> Tensor:
    """NumPy scalars as one tensor of their dtype (mixed with other scalars: promoted as
    ``ember.as_tensor`` does, as PyTorch's; NumPy's rules would make float32 and int32 float64)."""
    dtype = batch[0].dtype
    if dtype.kind in "OSU":
        raise TypeError(_BAD.format(dtype))
    if all(type(b) is type(batch[0]) for b in batch):
        return ember.as_tensor(np.asarray(batch))
    return ember.as_tensor(list(batch))


def collate_float_fn(batch: Sequence[float], *, collate_fn_map: dict | None = None) -> Tensor:
    """Python floats as a float64 tensor."""
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch: Sequence[int], *, collate_fn_map: dict | None = None) -> Tensor:
    """Python ints as an int64 tensor (bools as a bool tensor)."""
    return ember.tensor(batch)


def collate_str_fn(batch: Sequence[str | bytes], *, collate_fn_map: dict | None = None) -> Any:
    """Strings (and bytes) stay a list."""
    return batch


# The leaf types default_collate knows, in the order they are tried (an exact type first, then
# the first isinstance match), as torch's: add a type here, or pass collate() a map of your own.
default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def collate(batch: Sequence[Any], *, collate_fn_map: dict | None = None) -> Any:
    """Merges samples into a batch: an element whose type (or a base of it) is in
    ``collate_fn_map`` goes to that function (called ``fn(batch, collate_fn_map=...)``);
    dicts, named tuples and sequences are collated field by field with the same map.

    Example:
        >>> collate([{"a": 1}, {"a": 2}], collate_fn_map={int: lambda b, **kw: sum(b)})
        {'a': 3}
    """
    elem = batch[0]
    if collate_fn_map is not None:
        fn = collate_fn_map.get(type(elem))
        if fn is None:
            fn = next((f for t, f in collate_fn_map.items() if isinstance(elem, t)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, Mapping):
        return rebuild(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                               for key in elem})
    if isinstance(elem, Sequence) and not isinstance(elem, str | bytes):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return rebuild(elem, [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)])
    if isinstance(elem, numbers.Number) and _collates_numbers(collate_fn_map):
        return ember.tensor(batch)  # (complex numbers: Ember collates them, torch refuses)
    raise TypeError(_BAD.format(type(elem)))


def _collates_numbers(collate_fn_map: dict | None) -> bool:
    """Whether a map collates Python ints and floats as default_collate does (it, or a copy of
    it): then it collates the other numbers (complex) as default_collate does too."""
    return collate_fn_map is default_collate_fn_map or collate_fn_map is not None and (
        collate_fn_map.get(int) is collate_int_fn and collate_fn_map.get(float) is collate_float_fn)


def default_collate(batch: Sequence[Any]) -> Any:
    """Merges a list of samples into a batch.

    Tensors are stacked along a new first dimension; NumPy arrays become stacked tensors;
    Python floats become a float64 tensor and ints an int64 tensor (bools a bool tensor);
    strings stay a list; dicts, named tuples and lists are collated field by field (a batch of
    plain tuples gives a list, as in PyTorch). Other types: add a function to
    :data:`default_collate_fn_map`, or call :func:`collate` with a map of your own.

    Example:
        >>> default_collate([(ember.tensor([1.0]), 0), (ember.tensor([2.0]), 1)])
        [tensor([[1.],
                [2.]]), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data: Any) -> Any:
    """NumPy arrays and scalars (also inside dicts, tuples and lists) become tensors, those
    of string or object dtype kept; so is the rest, an array of a type from outside NumPy's
    top module too (masked, record, a user's subclass), as PyTorch's: it would lose its
    mask, fields or attributes.

    Example:
        >>> default_convert({"x": np.zeros(2)})
        {'x': tensor([0., 0.], dtype=ember.float64)}
    """
    if isinstance(data, np.ndarray | np.generic) and type(data).__module__ == "numpy" and \
            data.dtype.kind not in "OSU":  # (np.matrix and np.memmap are converted)
        return ember.as_tensor(np.asarray(data))
    if isinstance(data, Mapping):
        return rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return rebuild(data, [default_convert(d) for d in data])
    return data
