"""Reading nested Python and NumPy data for :func:`~ember.ops.creation.tensor`: the dtype
PyTorch infers for it, the error for data that is ragged or not numbers, and integers too
large for int64."""

from __future__ import annotations

import itertools
from typing import Any, NoReturn

import numpy as np

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentTypeError, DTypeError, ShapeError, ValueOverflow
from ember.layouts import is_dense, stride_order
from ember.ops.fits import check_fits
from ember.tensor import Tensor


def preserved_copy(a: Any) -> Any:
    """A copy of backend array ``a`` in its own order of dimensions, as PyTorch copies data
    into a tensor (``preserve_format``): a dense layout keeps its strides (a transpose's), an
    expanded one is laid out by its order of strides (NumPy's "K" order would put a
    broadcast dimension innermost: ``(1, 2)`` strides for a row broadcast to (2, 3))."""
    if a.flags.c_contiguous or is_dense(a):
        return a.copy(order="K")
    dims = stride_order(a.shape, tuple(abs(s) // a.itemsize for s in a.strides))
    return a.transpose(dims).copy().transpose(tuple(np.argsort(dims)))


def _ragged(data: Any) -> str | None:
    """Where the nested sequences ``data`` stop being rectangular (as PyTorch words it,
    against the shape its first elements give), or None."""
    def is_seq(d: Any) -> bool:
        return isinstance(d, (list, tuple)) or getattr(d, "ndim", 0) > 0

    shape, first = [], data
    while is_seq(first):
        shape.append(len(first))
        if not len(first):
            break
        first = first[0]

    def find(d: Any, dim: int) -> str | None:
        if dim == len(shape):
            return f"expected a number at dim {dim}, got a sequence" if is_seq(d) else None
        if not is_seq(d):
            return f"expected a sequence of length {shape[dim]} at dim {dim}, got a number"
        if len(d) != shape[dim]:
            return f"expected a sequence of length {shape[dim]} at dim {dim} (got {len(d)})"
        return next((r for r in (find(e, dim + 1) for e in d) if r), None)

    return find(data, 0)


def one_element_tensors_as_numbers(data: list | tuple, anywhere: bool = False) -> list | tuple:
    """``data`` with its one-element tensors of one or more dims as 0-d arrays: PyTorch reads
    a tensor in a sequence as a number (``[t([1.]), t([2.])]`` is of shape (2,), not (2, 1));
    Ember stacks the larger ones, which PyTorch refuses. Only when ``data``'s first leaf is a
    tensor (Ember's or another library's), or ``anywhere`` (NumPy could not read ``data``:
    ``[1, t([2.])]``), so that lists of numbers cost nothing more. Each value is read as
    ``np.array(data)`` would read it, with no op call."""
    if not anywhere:
        leaf = data
        while type(leaf) in (list, tuple) and leaf:
            leaf = leaf[0]
        if type(leaf) in _SCALARS or isinstance(leaf, np.generic) or \
                not isinstance(leaf, Tensor) and not _foreign(leaf):
            return data
    return type(data)(
        np.asarray(v).reshape(()) if isinstance(v, Tensor) and v.ndim and v.numel() == 1 else
        one_element_tensors_as_numbers(v, True) if type(v) in (list, tuple) else
        _foreign_as_array(v) for v in data)


def _foreign_as_array(v: Any) -> Any:
    """``v``, or as a NumPy array (0-d when it holds one element, read as a number, as
    PyTorch reads it) if it is another library's tensor: a ``torch.Tensor``, a copy through
    DLPack where NumPy can't read it (bfloat16, a negative bit)."""
    if not _foreign(v):
        return v
    try:
        array = np.asarray(v)
    except (ValueError, TypeError, RuntimeError):
        array = read_foreign(v, None)
    return array.reshape(()) if array.size == 1 else array


def _foreign(v: Any) -> bool:
    """Whether ``v`` is another library's tensor (with DLPack, not a NumPy array)."""
    return not isinstance(v, Tensor | np.ndarray | np.generic) and hasattr(type(v), "__dlpack__")


def read_sequence(data: list | tuple, exc: Exception) -> tuple[np.ndarray, list | tuple]:
    """NumPy's reading of ``data`` that NumPy could not read as it is (raising ``exc``), once
    every one-element tensor in it reads as a number, and that data; else ``tensor``'s
    error."""
    data = one_element_tensors_as_numbers(data, anywhere=True)
    try:
        return np.array(data), data
    except (ValueError, TypeError):
        array = read_promoted(data, None)
        if array is None:
            unreadable(data, f"cannot read data of type {type(data).__name__}: {exc}")
        return array, data


def read_data(data: Any) -> tuple[np.ndarray, Any]:
    """A copy of ``data`` (anything but a tensor) as NumPy reads it, and ``data`` as read: a
    sequence's one-element tensors as numbers, an array or a ``torch.Tensor`` (what its
    ``__array__`` gives: a view of its memory) in its own layout, as PyTorch copies it
    (:func:`preserved_copy`); data NumPy can't read as it is, through :func:`read_sequence`
    or :func:`read_foreign`."""
    kind = type(data)
    if kind in (list, tuple):
        data = one_element_tensors_as_numbers(data)
        try:
            return np.array(data), data
        except (ValueError, TypeError, RuntimeError) as exc:
            return read_sequence(data, exc)
    try:
        if kind is np.ndarray:
            return data.copy() if data.flags.c_contiguous else preserved_copy(data), data
        if kind in _SCALARS or isinstance(data, np.generic) or not hasattr(kind, "__array__"):
            return np.array(data), data  # (numbers, buffers)
        return preserved_copy(np.asarray(data)), data
    except (ValueError, TypeError, RuntimeError) as exc:  # (a torch.Tensor needing grad)
        return read_foreign(data, exc), data


def _leaves(data: list | tuple) -> Any:
    for v in data:
        if type(v) in (list, tuple):
            yield from _leaves(v)
        else:
            yield v


def read_objects(array: np.ndarray, data: Any, dtype: Any) -> np.ndarray:
    """Data NumPy read as objects (``array``), read as numbers where PyTorch reads it so:
    Python ints beyond int64 (:func:`huge_ints`), or data whose dtypes NumPy cannot promote
    (:func:`read_promoted`); else ``array`` as it is."""
    if any(type(v) is int for v in array.flat) and all(isinstance(v, NUMBERS) for v in array.flat):
        return huge_ints(array, data, dtype)
    return read_promoted(data, array) if type(data) in (list, tuple) else array


def read_promoted(data: list | tuple, array: np.ndarray | None) -> np.ndarray | None:
    """Numbers, NumPy scalars and 0-d tensors or arrays NumPy has no common dtype for (a
    bfloat16 one among others: ``[t(1., bfloat16), 2]``, ``[ml_dtypes.bfloat16(1), 2]``)
    read as float64 or complex128, from which their promoted dtype (:func:`sequence_dtype`)
    holds each exactly; ``array`` (NumPy's reading, or None) when ``data`` holds anything
    else."""
    if not all(isinstance(v, NUMBERS) or isinstance(v, Tensor | np.ndarray | np.generic) and
               v.ndim == 0 and dtypes.has_numpy(v.dtype.np if isinstance(v, Tensor) else v.dtype)
               for v in _leaves(data)):
        return array
    found = sequence_dtype(data)
    if not found.is_floating_point and not found.is_complex:
        return array
    try:
        return np.array(data, dtype=np.complex128 if found.is_complex else np.float64)
    except (ValueError, TypeError):  # (ragged: tensor's error names where)
        return array


def exact_ints(data: list | tuple, array: np.ndarray) -> np.ndarray:
    """int64 data NumPy read as float64 (``array``: a float among the ints) read again value
    by value, each truncated on its own, as PyTorch reads it: ``[2**62 + 1, 1.0]`` keeps its
    last digit (float64 has 53 bits), ``[2**63 - 1, 1.0]`` fits (as float64 it would not);
    ``array`` when some value is no int64 (for the caller's range check to name)."""
    if not array.size or np.abs(array).max() < 2 ** 53 or not np.isfinite(array).all():
        return array
    values = np.array(data, dtype=object)
    try:
        return np.array([int(v) for v in values.flat], dtype=np.int64).reshape(values.shape)
    except OverflowError:
        return array


def read_foreign(data: Any, exc: Exception | None) -> np.ndarray:
    """A copy of an array or tensor NumPy could not read (raising ``exc``) but DLPack can, in
    its own layout: a ``torch.Tensor`` of bfloat16, one requiring grad (detached, as
    ``torch.tensor`` copies it), or one with its negative or conjugate bit set (resolved:
    DLPack would drop the sign); else ``tensor``'s error."""
    if not hasattr(data, "__dlpack__"):
        unreadable(data, f"cannot read data of type {type(data).__name__}: {exc}")
    from ember.ops.dlpack import from_dlpack  # (it imports the constructors)

    if getattr(data, "requires_grad", False) and hasattr(data, "detach"):
        data = data.detach()
    return preserved_copy(from_dlpack(resolved(data)).cpu().numpy())


def resolved(obj: Any) -> Any:
    """``obj`` with the negation or conjugation a ``torch.Tensor`` keeps pending applied (its
    negative or conjugate bit: ``z.conj().imag`` has the first), a new tensor; ``obj`` itself
    when none is pending. Its memory holds the values before them, and DLPack drops the
    negative bit (refusing the conjugate one)."""
    if isinstance(obj, Tensor) or not callable(getattr(obj, "is_neg", None)) or \
            not (obj.is_neg() or obj.is_conj()):
        return obj
    return obj.resolve_conj().resolve_neg()


def torch_memory(obj: Any) -> np.ndarray | None:
    """The NumPy array over a CPU ``torch.Tensor``'s memory, shared (what DLPack gives, at a
    fraction of its cost), or None when NumPy cannot view it so: another object, a subclass,
    a tensor requiring grad or with a pending negative or conjugate bit, bfloat16, float8,
    quantized, sparse, or on another device."""
    if type(obj).__name__ != "Tensor" or type(obj).__module__ != "torch":
        return None
    try:
        return obj.numpy()
    except (TypeError, RuntimeError):
        return None


def unreadable(data: Any, problem: str) -> NoReturn:
    """Raises ``tensor``'s error for ``data`` NumPy cannot read as numbers: a ShapeError
    saying where it is ragged, else a TypeError stating ``problem``."""
    where = _ragged(data)
    if where:
        raise ShapeError(f"tensor: ragged nested sequences: {where}. Hint: every row must "
                         "have the same length")
    raise ArgumentTypeError(f"tensor: {problem}")


def infer_dtype(array: np.ndarray, data: Any) -> DType:
    """PyTorch's inference: Python floats give the default dtype, NumPy (and any array or
    tensor NumPy reads, a ``torch.Tensor``) keeps its own; a buffer (``bytearray``,
    ``array.array``) reads as a sequence of Python numbers."""
    if type(data) in (list, tuple):  # (the common case: no attribute lookups)
        if _numpy_agrees(array.dtype, data):
            return dtypes.from_numpy(array.dtype)
    elif isinstance(data, np.ndarray | np.generic) or hasattr(type(data), "__array__") or \
            hasattr(type(data), "__dlpack__"):
        return dtypes.from_numpy(array.dtype)
    if isinstance(data, list | tuple) and array.dtype.kind in "fc":
        if _python_reals(array, data):  # (the common case: no walk)
            return dtypes.get_default_dtype()
        return sequence_dtype(data)  # (NumPy promotes otherwise: [int16, float16] is float32)
    if array.dtype.kind == "f":  # (Python floats, or a buffer's: PyTorch reads them so)
        return dtypes.get_default_dtype()
    if array.dtype.kind == "c":  # Python complex numbers: the default complex dtype
        return dtypes.get_default_dtype().to_complex()
    if array.dtype == np.uint64 and (type(data) is int or isinstance(data, list | tuple) and
                                     sequence_dtype(data) is dtypes.int64):
        # (Python ints past int64, which NumPy read as uint64: PyTorch infers int64, refuses)
        raise ValueOverflow(f"tensor: the Python int {int(array.max())} does not fit int64, the "
                            "dtype inferred for Python ints, as in PyTorch. Hint: pass "
                            "dtype=ember.uint64 to store it")
    if array.dtype.kind in "iu" and not isinstance(data, list | tuple | int):  # (a buffer's
        return dtypes.int64  # integers, read as Python ints; past int64 refused as they are)
    return dtypes.from_numpy(array.dtype)


_REALS = {float, int, bool}
_SCALARS = frozenset((float, int, bool, complex))


def _python_reals(array: np.ndarray, data: list | tuple) -> bool:
    """Whether NumPy read ``data`` as float64 for being a flat sequence of Python numbers,
    a float among them (ints alone are float64 there only past int64, which is refused)."""
    if array.dtype != np.float64 or array.ndim != 1:
        return False
    kinds = set(map(type, data))
    return float in kinds and kinds <= _REALS


def _numpy_agrees(dtype: np.dtype, data: Any) -> bool:
    """Whether NumPy's float or complex ``dtype`` for the sequence ``data`` is surely
    PyTorch's, without walking it: its first leaf is a NumPy scalar of that dtype, where
    PyTorch's fold starts, and no Python float can widen it (the default dtype is no
    wider)."""
    if dtype.kind not in "fc" or not isinstance(data, list | tuple):
        return False
    first = data
    while isinstance(first, list | tuple) and first:
        first = first[0]
    return isinstance(first, np.generic) and first.dtype == dtype and \
        dtypes.get_default_dtype().itemsize <= np.finfo(dtype).dtype.itemsize


def sequence_dtype(data: list | tuple) -> DType:
    """PyTorch's dtype for nested sequences: its leaves' dtypes promoted in order (so
    ``[np.uint16(5), 1]`` raises as PyTorch, ``[np.float32(2.5), np.uint16(5), 1]`` is
    float32), a Python float reading as the default dtype and a NumPy scalar, array or
    tensor as its own dtype (``[np.float64(1), 2.0]`` is float64); complex128 ends the fold
    as in PyTorch."""
    default = dtypes.get_default_dtype()
    python = {float: default, complex: default.to_complex(), int: dtypes.int64,
              bool: dtypes.bool_}
    found, level = None, [data]
    while level:  # level by level: the leaves of rectangular data all lie on the last one
        rows, kinds = [], set()
        for seq in level:  # (by type: long lists stay fast)
            kinds.update(map(type, seq))
        if len(kinds) > 1:  # (in order of appearance, where PyTorch's order may raise)
            kinds = dict.fromkeys(map(type, itertools.chain.from_iterable(level)))
        for kind in kinds:
            if issubclass(kind, list | tuple):
                rows.extend(x for seq in level for x in seq if type(x) is kind)
                continue
            if kind in python:
                leaves = [python[kind]]
            elif issubclass(kind, np.generic):
                leaves = [dtypes.from_numpy(np.dtype(kind))]
            else:  # arrays and tensors; anything else NumPy read as a float
                leaves = [_dtype_of(x, default) for seq in level for x in seq
                          if type(x) is kind]
            for leaf in leaves:
                found = leaf if found is None else dtypes.promote_types(found, leaf)
                if found is dtypes.complex128:
                    return found
        level = rows
    return default if found is None else found


def _dtype_of(x: Any, default: DType) -> DType:
    """``x``'s dtype: Ember's, NumPy's, or another library's by its name (a ``torch.Tensor``'s
    ``torch.float64``); ``default`` when it has none Ember knows."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, np.dtype):
        return dtypes.from_numpy(dtype)
    try:
        return default if dtype is None else dtypes.to_dtype(str(dtype))
    except DTypeError:
        return default


def exact_uint64(data: Any, array: np.ndarray) -> np.ndarray:
    """``data`` read straight into uint64 when NumPy read it as float64 only because some
    integers lie beyond int64 (so none loses its low digits); ``array`` for data that
    holds true fractions, negatives or non-finite numbers."""
    try:
        exact = np.array(data, dtype=np.uint64)
    except (OverflowError, ValueError, TypeError):
        return array
    return exact if np.array_equal(exact.astype(np.float64), array) else array


NUMBERS = (int, float, complex, np.number, np.bool_)  # (bool is an int)


def huge_ints(array: np.ndarray, data: Any, dtype: Any) -> np.ndarray:
    """Python ints NumPy could hold in no integer dtype (beyond uint64 or below int64's
    minimum), maybe among other numbers: an overflow error for an integer ``dtype`` (when
    None, the one PyTorch infers: int64 unless floats or complex numbers are present), as
    PyTorch's, else floats or complex numbers (what such a tensor stores)."""
    target = dtypes.to_dtype(dtype) if dtype is not None else \
        sequence_dtype(data) if isinstance(data, list | tuple) else dtypes.int64
    if target.category == dtypes.INT:
        ints = [v for v in array.flat if type(v) is int]
        for v in (min(ints), max(ints)):
            check_fits("tensor", v, target)
    return array.astype(np.complex128 if any(isinstance(v, complex | np.complexfloating)
                                             for v in array.flat) else np.float64)
