"""The errors of ops on input they do not take: complex tensors, PyTorch's limited-support
dtypes, tensors on different devices, and a backend's own failure explained in Ember's terms
(the ``infer`` rule's error where it finds the problem)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.dtypes import ALL_LIMITED, FLOAT, DType, from_numpy
from ember.errors import (
    AllocationError,
    DeviceError,
    DTypeError,
    EmberError,
    OpError,
    is_allocation_failure,
)
from ember.ops.tensor_spec import spec
from ember.tensor import Tensor

if TYPE_CHECKING:
    from ember.ops.primitive import Primitive


def explain_failure(prim: Primitive, inputs: tuple, params: dict, exc: Exception) -> EmberError:
    """Turns a backend exception into a clear Ember error: the ``infer`` rule's, if it finds
    the problem, else one naming the op, the inputs and the backend's message."""
    specs = [spec(t) for t in inputs]
    if not prim.complex_grad and any(s.dtype.is_complex for s in specs):
        return complex_error(prim.name, next(s.dtype for s in specs if s.dtype.is_complex))
    try:
        prim.infer(*specs, **params)
    except EmberError as clear:
        return clear
    except Exception:  # noqa: BLE001 - an infer rule that itself fails explains nothing
        pass
    shown = ", ".join(str(s) for s in specs) or "no tensor inputs"
    if is_allocation_failure(exc):
        return AllocationError(f"{prim.name}: cannot allocate its result (inputs: {shown}): "
                               f"{exc}. Hint: use a smaller size or batch")
    return OpError(f"{prim.name}: failed on {shown}: {type(exc).__name__}: {exc}")


def complex_error(op: str, dtype: Any) -> DTypeError:
    """The error of an op that does not take complex numbers (those have no order, so no
    comparison, max, sort, clamp or relu; nor rounding). ``dtype``: an Ember or NumPy one."""
    hint = "sgn(z) is z / |z|" if op == "sign" else "take .abs() or .real first"  # (PyTorch's)
    return DTypeError(f"{op}: {dtype.name if isinstance(dtype, DType) else dtype} tensors are "
                      f"not supported. Hint: {hint}")


def refuse_complex(op: str, *tensors: Any) -> None:
    """Raises :func:`complex_error` if one of ``tensors`` (Python numbers are ignored) is
    complex: for an op's wrapper, off its hot path (where it handles non-floating input). A
    forward rule tests ``a.dtype.kind == "c"`` inline instead, paying one dtype read."""
    for t in tensors:
        if isinstance(t, Tensor) and t._data.dtype.kind == "c":
            raise complex_error(op, t.dtype)


def complex_grad_error(prim: Primitive, inputs: tuple) -> DTypeError:
    """The error for recording a complex op whose gradient rules are real-only."""
    shown = ", ".join(str(spec(t)) for t in inputs)
    return DTypeError(f"{prim.name}: gradients through complex tensors are not supported for "
                      f"this op ({shown}). Hint: compute it under ember.no_grad(), or on the "
                      "real and imaginary parts (.real, .imag) separately")


def check_limited(prim: Primitive, np_dtype: Any) -> None:
    """Refuses a primitive on a limited-support dtype that PyTorch does not compute it on."""
    if not prim.view:  # (a view only moves elements)
        refuse_limited(prim.name, from_numpy(np_dtype), prim.limited_dtypes)


def refuse_limited(op: str, dtype: DType, allowed: frozenset[DType] = frozenset()) -> None:
    """Raises a DTypeError if ``dtype`` is one of PyTorch's limited-support dtypes (uint16,
    uint32, uint64, the float8s) not in ``allowed``: for a composite op whose primitives take
    it where PyTorch's op does not (``gather`` is an ``index``)."""
    if dtype in ALL_LIMITED and dtype not in allowed:
        raise DTypeError(f"{op}: not implemented for {dtype.name} tensors, as in PyTorch: its "
                         "limited-support dtypes (uint16, uint32, uint64, the float8s) have "
                         "casts, copies, indexing and a few ops only. Hint: convert with "
                         ".float() (or .long()) first")


def common_device(prim: Primitive, inputs: tuple) -> Any:
    """The device of inputs on more than one: the meta device when every other input is a
    0-d CPU tensor (a scalar, which PyTorch lets meet any device) or, after the first, an
    integer CPU tensor (indices, which PyTorch lets index a meta tensor), else a
    DeviceError."""
    meta = next((t._device for t in inputs if t._device.is_meta), None)
    if meta is None or not all(t._device is meta or (t._device.type == "cpu" and (
            not t.ndim or (i and t.dtype.category < FLOAT))) for i, t in enumerate(inputs)):
        raise _device_error(prim, inputs)
    return meta


def _device_error(prim: Primitive, inputs: tuple) -> DeviceError:
    devices = ", ".join(f"input {i} on {t.device}" for i, t in enumerate(inputs))
    return DeviceError(f"{prim.name}: expected all tensors on one device, got {devices}. "
                       "Hint: move them with .to(device) first.")
