"""``assert_close``: PyTorch's comparison of tensors, arrays, numbers and nested containers of
them, with its default tolerances per dtype and its failure messages.

The comparison runs as PyTorch's does, in two passes: first the inputs are paired up through
sequences and mappings (a length or key mismatch, a pair of unsupported types or half-given
tolerances fail here, before any value is compared), then each pair is compared and the first
failure is raised. Values are compared on host NumPy arrays.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember import dtypes
from ember.layouts import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ember.ops.creation import as_tensor, tensor
from ember.tensor import Tensor

__all__ = ["assert_close", "assert_allclose"]

# (rtol, atol) by dtype, PyTorch's table; other dtypes (integers, bool, float8) compare exactly
_TOLERANCES = {
    dtypes.float16: (1e-3, 1e-5),
    dtypes.bfloat16: (1.6e-2, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
    dtypes.complex64: (1.3e-6, 1e-5),
    dtypes.complex128: (1e-7, 1e-7),
}
_ALLCLOSE_TOLERANCES = {dtypes.float16: (1e-3, 1e-3), dtypes.float32: (1e-4, 1e-5),
                        dtypes.float64: (1e-5, 1e-8)}  # the deprecated assert_allclose's
_QUANTIZED_TOLERANCES = (1.3e-6, 1e-5)  # every quantized dtype's, on the dequantized values
_NUMBER_DTYPES = {int: dtypes.int64, float: dtypes.float64, complex: dtypes.complex128}
_WIDE_UNSIGNED = (dtypes.uint16, dtypes.uint32, dtypes.uint64)  # promoted as int64, as PyTorch
# a compressed sparse layout's name and its (compressed, plain) index getters, as PyTorch's
_COMPRESSED = {sparse_csr: ("CSR", "crow_indices", "col_indices"),
               sparse_csc: ("CSC", "ccol_indices", "row_indices"),
               sparse_bsr: ("BSR", "crow_indices", "col_indices"),
               sparse_bsc: ("BSC", "ccol_indices", "row_indices")}

Msg = str | Callable[[str], str] | None


class _Failure(Exception):
    """A failed check: the exception type to raise, its message, and where in the nested
    inputs it happened (the keys and indices down to the pair)."""

    def __init__(self, kind: type[Exception], message: str, where: tuple = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where

    def to_error(self, msg: Msg) -> Exception:
        """The exception to raise: a string ``msg`` replaces the message; a callable one gets
        the message (with the item it failed on) and returns the new one."""
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.message
        if self.where:
            text += "\n\nThe failure occurred for item " + "".join(str([k]) for k in self.where)
        return self.kind(msg(text) if callable(msg) else text)


@dataclass(frozen=True)
class _Options:
    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_device: bool
    check_dtype: bool
    check_layout: bool
    check_stride: bool


def _loosest(table: dict, *kinds: dtypes.DType) -> tuple[float, float]:
    """The loosest ``(rtol, atol)`` of ``kinds`` by ``table``; exact for dtypes not in it."""
    rtols, atols = zip(*(table.get(kind, (0.0, 0.0)) for kind in kinds), strict=True)
    return max(rtols), max(atols)


def _tolerances(*kinds: dtypes.DType, opts: _Options, where: tuple,
                quantized: bool = False) -> tuple[float, float]:
    """The given ``rtol`` and ``atol``, or the defaults: the loosest of ``kinds``, or those of
    quantized values."""
    if (opts.rtol is None) != (opts.atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                       f"but got no {'rtol' if opts.rtol is None else 'atol'}.", where)
    if opts.rtol is not None:
        if not (opts.rtol >= 0 and opts.atol >= 0):  # (NaN too; PyTorch's isclose refuses them)
            raise _Failure(ValueError, "assert_close: 'rtol' and 'atol' must be non-negative, "
                           f"but got rtol={opts.rtol} and atol={opts.atol}.", where)
        return opts.rtol, opts.atol  # type: ignore[return-value]
    return _QUANTIZED_TOLERANCES if quantized else _loosest(_TOLERANCES, *kinds)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Msg = None) -> None:
    """Asserts that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and NumPy arrays) must have the same shape and, unless switched off, the same
    device, dtype and layout (and strides, with ``check_stride=True``); their values must
    satisfy ``|actual - expected| <= atol + rtol * |expected|`` elementwise (NaNs equal only
    with ``equal_nan=True``; meta tensors have no values to compare). Without ``rtol`` and
    ``atol`` (give both or neither) the dtype's defaults apply: float16 (1e-3, 1e-5), bfloat16
    (1.6e-2, 1e-5), float32 and complex64 (1.3e-6, 1e-5), float64 and complex128 (1e-7, 1e-7),
    others exact. Python numbers compare as float64/int64/complex128 (and their types must
    match under ``check_dtype``), booleans and ``None`` by identity; sequences and mappings are
    compared item by item.

    Raises:
        AssertionError: naming the mismatched elements (count and percentage) and the greatest
            absolute and relative differences with their indices, or the attribute that
            differs; ``msg`` replaces the message (a callable gets it and returns a new one)
            of these value and attribute mismatches, not of the structural failures
            (lengths, keys, types, tolerances), as in PyTorch.
        TypeError: for inputs of types it cannot compare.
        ValueError: when only one of ``rtol`` and ``atol`` is given, or one is negative or NaN.

    Example:
        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.5]))
        Traceback (most recent call last):
        ...
        AssertionError: Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 1 / 2 (50.0%)
        Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True  # (pytest shows the caller's line)
    opts = _Options(allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype,
                    check_layout, check_stride)
    try:
        comparisons = _pairs(actual, expected, (), opts)
    except _Failure as failure:  # the inputs don't pair up: msg is for value mismatches only
        raise failure.to_error(None) from None
    try:
        for compare in comparisons:
            compare()
    except _Failure as failure:
        raise failure.to_error(msg) from None


def _pairs(actual: Any, expected: Any, where: tuple, opts: _Options) -> list[Callable[[], None]]:
    """The comparisons of the leaves of ``actual`` and ``expected``, walking sequences and
    mappings in step (failing on different lengths or keys)."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                           f"{len(actual)} != {len(expected)}", where)
        return [c for i, (a, e) in enumerate(zip(actual, expected, strict=True))
                for c in _pairs(a, e, (*where, i), opts)]
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys, expected_keys = set(actual), set(expected)
        if keys != expected_keys:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(expected_keys - keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(keys - expected_keys)}",
                           where)
        try:
            ordered = sorted(keys)  # deterministic: the first failure is always the same one
        except TypeError:
            ordered = list(keys)
        return [c for k in ordered for c in _pairs(actual[k], expected[k], (*where, k), opts)]
    return [_leaf_pair(actual, expected, where, opts)]


def _is_sequence(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)


def _leaf_pair(actual: Any, expected: Any, where: tuple, opts: _Options) -> Callable[[], None]:
    if actual is None or expected is None:
        return lambda: _compare_none(actual, expected, where)
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        return lambda: _compare_bools(bool(actual), bool(expected), where)
    numbers = (int, float, complex, np.number)
    if isinstance(actual, numbers) and isinstance(expected, numbers) \
            and not isinstance(actual, bool) and not isinstance(expected, bool):
        a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        rtol, atol = _tolerances(_number_dtype(a), _number_dtype(e), opts=opts, where=where)
        return lambda: _compare_numbers(a, e, rtol, atol, opts, where)
    if _is_quantized(actual) and _is_quantized(expected):
        rtol, atol = _tolerances(opts=opts, where=where, quantized=True)
        return lambda: _compare_tensors(actual, expected, rtol, atol, opts, where)
    if _is_sparse(actual) or _is_sparse(expected):
        if not all(_is_sparse(x) or isinstance(x, Tensor) for x in (actual, expected)):
            raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                           f"{type(actual)} and {type(expected)}.", where)
        rtol, atol = _tolerances(actual.dtype, expected.dtype, opts=opts, where=where)
        return lambda: _compare_sparse(actual, expected, rtol, atol, opts, where)
    pair = _tensor_pair(actual, expected, opts)
    if pair is None:
        raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                       f"{type(actual)} and {type(expected)}.", where)
    a, e = pair
    rtol, atol = _tolerances(a.dtype, e.dtype, opts=opts, where=where)
    return lambda: _compare_tensors(a, e, rtol, atol, opts, where)


def _number_dtype(x: complex) -> dtypes.DType:
    """The dtype a Python number compares as (a subclass, such as an ``IntEnum``, as its
    base type's)."""
    return next(kind for base, kind in _NUMBER_DTYPES.items() if isinstance(x, base))


def _is_quantized(x: Any) -> bool:
    """Whether ``x`` is a quantized tensor (``ember.quantize_per_tensor``'s, which is no
    :class:`Tensor`): compared by its dequantized values, as PyTorch does."""
    return not isinstance(x, Tensor) and getattr(x, "is_quantized", False) is True \
        and hasattr(x, "dequantize")


def _is_sparse(x: Any) -> bool:
    """Whether ``x`` is a sparse tensor (of any sparse layout; no :class:`Tensor`)."""
    return not isinstance(x, Tensor) and getattr(x, "layout", None) in (sparse_coo, *_COMPRESSED)


def _tensor_pair(actual: Any, expected: Any, opts: _Options) -> tuple[Tensor, Tensor] | None:
    """Both as tensors if they are tensor-likes (Ember tensors, NumPy arrays) of related
    types (the same type, without ``allow_subclasses``); else None."""
    tensor_like = (Tensor, np.ndarray)
    if not (isinstance(actual, tensor_like) and isinstance(expected, tensor_like)):
        return None
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not opts.allow_subclasses and type(actual) is not type(expected)):
        return None
    try:
        return as_tensor(actual), as_tensor(expected)
    except Exception:  # an array of a dtype Ember has no tensor for
        return None


def _compare_none(actual: Any, expected: Any, where: tuple) -> None:
    if not (actual is None and expected is None):
        raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", where)


def _compare_bools(actual: bool, expected: bool, where: tuple) -> None:
    if actual is not expected:
        raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", where)


def _compare_numbers(actual: complex, expected: complex, rtol: float, atol: float,
                     opts: _Options, where: tuple) -> None:
    if opts.check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != "
                       f"{type(expected)}.", where)
    if actual == expected or (opts.equal_nan and _isnan(actual) and _isnan(expected)):
        return
    diff = abs(actual - expected)
    if np.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_message(actual, expected, rtol, atol), where)


def _isnan(x: complex) -> bool:
    return bool(np.isnan(x))


def _compare_tensors(actual: Any, expected: Any, rtol: float, atol: float,
                     opts: _Options, where: tuple) -> None:
    _compare_attributes(actual, expected, opts, where)
    if any(getattr(x, "is_meta", False) for x in (actual, expected)):
        return  # meta tensors have no values: their attributes are all there is, as in PyTorch
    quantized = _is_quantized(actual)
    if quantized:
        actual, expected = actual.dequantize(), expected.dequantize()
    _compare_values(actual, expected, rtol, atol, opts.equal_nan, where,
                    _named("Tensor-likes", quantized), quantized)


def _compare_sparse(actual: Any, expected: Any, rtol: float, atol: float,
                    opts: _Options, where: tuple) -> None:
    """Sparse tensors as PyTorch compares them (without coalescing): the number of sparse dims
    (COO) and of specified values, the indices exactly, then the values; of other layouts
    (with ``check_layout=False``) as dense tensors."""
    _compare_attributes(actual, expected, opts, where)
    if actual.layout is not expected.layout:
        actual, expected = (x.to_dense() if _is_sparse(x) else x for x in (actual, expected))
        _compare_tensors(actual, expected, rtol, atol, opts, where)
        return
    if actual.layout is sparse_coo:
        name, indices = "COO", [("indices", "_indices")]
        if actual.sparse_dim() != expected.sparse_dim():
            raise _Failure(AssertionError, "The number of sparse dimensions in sparse COO "
                           f"tensors does not match: {actual.sparse_dim()} != "
                           f"{expected.sparse_dim()}", where)
    else:
        name, *getters = _COMPRESSED[actual.layout]
        indices = [(getter, getter) for getter in getters]
    if actual._nnz() != expected._nnz():
        raise _Failure(AssertionError, f"The number of specified values in sparse {name} "
                       f"tensors does not match: {actual._nnz()} != {expected._nnz()}", where)
    for shown, getter in indices:
        _compare_values(getattr(actual, getter)(), getattr(expected, getter)(), 0.0, 0.0,
                        False, where, f"Sparse {name} {shown}")
    _compare_values(actual._values(), expected._values(), rtol, atol, opts.equal_nan, where,
                    f"Sparse {name} values")


def _compare_values(actual: Tensor, expected: Tensor, rtol: float, atol: float,
                    equal_nan: bool, where: tuple, what: str, quantized: bool = False) -> None:
    """The elementwise comparison; on a mismatch the message calls the values ``what``."""
    a, e, common = _common_arrays(actual, expected)
    bitwise = common.is_floating_point and common.itemsize == 1  # the float8 dtypes
    if bitwise and (rtol != 0.0 or atol != 0.0):
        raise _Failure(AssertionError, f"Rtol={rtol} and atol={atol} are not supported for "
                       "bitwise comparison of low dimensional floats. Please use rtol=0.0 and "
                       "atol=0.0.", where)
    matches = _isclose(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.ndim == 0:  # (bools as bools: "Expected False but got True", as PyTorch's .item())
        kind = bool if common is dtypes.bool_ else _number
        message = _scalar_message(kind(a), kind(e), rtol, atol, quantized)
    else:
        message = _tensor_message(a, e, matches, rtol, atol, bitwise, what)
    raise _Failure(AssertionError, message, where)


def _compare_attributes(actual: Any, expected: Any, opts: _Options, where: tuple) -> None:
    def differ(name: str, a: Any, e: Any) -> _Failure:
        return _Failure(AssertionError, f"The values for attribute '{name}' do not match: "
                        f"{a} != {e}.", where)

    if actual.shape != expected.shape:
        raise differ("shape", actual.shape, expected.shape)
    if _is_quantized(actual):
        if actual.qscheme() != expected.qscheme():
            raise differ("qscheme()", actual.qscheme(), expected.qscheme())
    elif actual.layout != expected.layout:
        if opts.check_layout:
            raise differ("layout", actual.layout, expected.layout)
    elif opts.check_stride and actual.layout is strided and actual.stride() != expected.stride():
        raise differ("stride()", actual.stride(), expected.stride())
    if opts.check_device and actual.device != expected.device:
        raise differ("device", actual.device, expected.device)
    if opts.check_dtype and actual.dtype != expected.dtype:
        raise differ("dtype", actual.dtype, expected.dtype)


def _common_arrays(actual: Tensor, expected: Tensor
                   ) -> tuple[np.ndarray, np.ndarray, dtypes.DType]:
    """Both on the host in one dtype (the promoted one when they differ; wide unsigned
    integers as int64, as PyTorch), and that dtype; integers and bools as int64 (uint64 as
    itself), whose differences :func:`_abs_diff` takes without wrapping."""
    kinds = [dtypes.int64 if t.dtype in _WIDE_UNSIGNED else t.dtype for t in (actual, expected)]
    common = dtypes.promote_types(*kinds) if actual.dtype != expected.dtype else actual.dtype
    host = common if common.is_floating_point or common.is_complex else \
        dtypes.uint64 if actual.dtype == expected.dtype == dtypes.uint64 else dtypes.int64
    a, e = (np.asarray(t.detach().cpu().to(host).numpy()) for t in (actual, expected))
    return a, e, common


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float,
             equal_nan: bool) -> np.ndarray:
    """PyTorch's ``isclose``: equal, or a finite difference within ``atol + rtol * |e|``."""
    with np.errstate(all="ignore"):
        diff = _abs_diff(a, e)
        close = (a == e) | (np.isfinite(diff) & (diff <= atol + rtol * _magnitude(e)))
        if equal_nan and a.dtype.kind in "fcV":
            close |= np.isnan(a) & np.isnan(e)
    return close


def _abs_diff(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``|a - e|``; for 64-bit integers as uint64, the larger minus the smaller, exact where
    int64 arithmetic would wrap (``2**62 - -2**62``)."""
    if a.dtype.kind not in "iu":
        return np.abs(a - e)
    with np.errstate(all="ignore"):
        diff = np.where(a >= e, a - e, e - a)
    return diff.view(np.uint64) if diff.dtype == np.int64 else diff


def _magnitude(e: np.ndarray) -> np.ndarray:
    """``|e|``, as float64 for integers (``abs(-2**63)`` has no int64)."""
    return np.abs(e.astype(np.float64) if e.dtype.kind in "iu" else e)


def _number(x: np.ndarray | np.generic) -> complex:
    """A 0-d array or array scalar as the Python number ``.item()`` gives in PyTorch."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return complex(x)
    if np.issubdtype(x.dtype, np.integer):
        return int(x)
    return float(x)


def _scalar_message(actual: complex, expected: complex, rtol: float, atol: float,
                    quantized: bool = False) -> str:
    diff = abs(actual - expected)
    relative = float("inf") if expected == 0 else diff / abs(expected)
    return _message(_named("Scalars", quantized), f"Expected {expected} but got {actual}.",
                    diff, None, atol, relative, None, rtol)


def _tensor_message(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float,
                    atol: float, bitwise: bool, what: str) -> str:
    total, mismatched = matches.size, int(matches.size - matches.sum())
    counts = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    if bitwise:  # 8-bit floats compare exactly: the message says where they first differ
        first = tuple(int(i) for i in np.argwhere(~matches)[0])
        return (f"{what} are not 'equal'!\n\n{counts}\n"
                f"The first mismatched element is at index {first}.")
    with np.errstate(all="ignore"):
        diff = _abs_diff(a, e).ravel()
        magnitude = _magnitude(e).ravel()
        if diff.dtype.kind in "iu":  # integer division gives the default float dtype
            relative = diff.astype(np.float32) / magnitude.astype(np.float32)
        else:
            relative = diff / magnitude
    same = matches.ravel()
    diff[same], relative[same] = 0, 0
    at_diff, at_relative = int(np.argmax(diff)), int(np.argmax(relative))
    return _message(what, counts, _number(diff[at_diff]),
                    np.unravel_index(at_diff, a.shape), atol, _number(relative[at_relative]),
                    np.unravel_index(at_relative, a.shape), rtol)


def _named(what: str, quantized: bool) -> str:
    """What the message calls the values: "Quantized tensor-likes" for quantized ones."""
    return f"Quantized {what.lower()}" if quantized else what


def _message(what: str, extra: str, diff: complex, diff_at: tuple | None, atol: float,
             relative: complex, relative_at: tuple | None, rtol: float) -> str:
    exact = rtol == 0 and atol == 0

    def line(kind: str, value: complex, at: tuple | None, tol: float) -> str:
        text = (f"{kind.title()} difference: {value}" if at is None else
                f"Greatest {kind} difference: {value} at index {tuple(int(i) for i in at)}")
        return text + ("" if exact else f" (up to {tol} allowed)")

    return (f"{what} are not {'equal' if exact else 'close'}!\n\n{extra}\n"
            f"{line('absolute', diff, diff_at, atol)}\n"
            f"{line('relative', relative, relative_at, rtol)}")


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (as in PyTorch since 1.12): use :func:`assert_close`. Compares as tensors,
    ``expected`` made in ``actual``'s dtype, without checking dtypes, NaNs equal by default,
    with looser default tolerances: float16 (1e-3, 1e-3), float32 (1e-4, 1e-5), float64
    (1e-5, 1e-8).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     ember.testing.assert_allclose([1.0, 2.0], [1.0, 2.0001])
    """
    __tracebackhide__ = True
    warnings.warn("ember.testing.assert_allclose() is deprecated (as torch.testing's is since "
                  "1.12). Use ember.testing.assert_close() instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _loosest(_ALLCLOSE_TOLERANCES, actual.dtype, expected.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
