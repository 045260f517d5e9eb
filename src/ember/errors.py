"""Ember's exception classes.

Each subclasses the built-in exception a PyTorch user would catch, so existing ``except``
clauses keep working: PyTorch raises ``RuntimeError`` for most bad shapes, dtypes and indices,
so the shape, dtype and index errors are ``RuntimeError`` too, besides the Python class that
names the kind of mistake (``ValueError``, ``TypeError``, ``IndexError``). Messages name the
op, the shapes/dtypes/devices involved and a hint.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
from collections.abc import Callable, Iterable


class EmberError(Exception):
    """Base class of every error Ember raises on purpose.

    A message that starts with the name of an op other than the public function the user
    called (the ``sub`` inside ``margin_ranking_loss``) is prefixed with that function's name,
    ``margin_ranking_loss: sub: shapes …``, by the hook the ops register
    (:func:`set_message_hook`); made when the error is, on the error path only.
    """

    def __init__(self, *args: object) -> None:
        if _message_hook is not None and args and type(args[0]) is str:
            args = (_message_hook(args[0]), *args[1:])
        super().__init__(*args)


_message_hook: Callable[[str], str] | None = None


def set_message_hook(hook: Callable[[str], str] | None) -> None:
    """Makes ``hook(message)`` rewrite the message of every :class:`EmberError` made from now
    on (:func:`ember.ops.public_op.public_message`: the errors layer knows no ops)."""
    global _message_hook
    _message_hook = hook


class ShapeError(EmberError, ValueError, RuntimeError):
    """Shapes do not fit an op, e.g. ``matmul: (32, 784) @ (512, 10): inner sizes differ``.
    A RuntimeError as PyTorch's are."""


class DTypeError(EmberError, TypeError, RuntimeError):
    """A dtype an op cannot take, e.g. a gradient asked of an integer tensor. A RuntimeError
    as PyTorch's ``"add" not implemented for 'Bool'`` and ``expected scalar type Float but
    found Long`` are (not a NotImplementedError: ``except NotImplementedError`` fallbacks,
    a parametrization's missing ``right_inverse``, must not swallow it)."""


class ArgumentTypeError(EmberError, TypeError, RuntimeError):
    """An argument of the wrong kind: a many-element tensor where a bool or an int belongs, a
    string where a size does, e.g. ``sum(): argument 'keepdim' must be bool, not a
    Tensor of shape (2,) int64``. A TypeError as PyTorch's argument parser raises, and a
    RuntimeError as PyTorch's Python code raises for ``bool()`` of such a tensor."""


class ArgumentError(EmberError, ValueError, RuntimeError):
    """An argument's value an op cannot take: an unknown mode, a negative size, a probability
    past 1, e.g. ``qr: mode must be 'reduced', 'complete' or 'r', got 'x'``. A ValueError as
    Python's and PyTorch's Python-side checks raise, and a RuntimeError as its C++ ops' checks
    raise, so an ``except`` clause written for either catches it."""


class FileModeError(ArgumentError, io.UnsupportedOperation):
    """A file object that cannot do what is asked: ``ember.load`` of a file opened ``'wb'`` or
    of a stream that cannot seek (a pipe), ``ember.save`` to one opened ``'rb'``. An
    ``io.UnsupportedOperation`` (an ``OSError`` and a ``ValueError``), as ``torch.load`` and
    ``torch.save`` raise there (for a pipe, an ``OSError``), so the fallback
    ``except io.UnsupportedOperation: load(io.BytesIO(f.read()))`` written for PyTorch catches
    it."""


class DeviceError(EmberError, RuntimeError):
    """Tensors on different devices meet in one op, or a device is unknown."""


class NoDataError(DeviceError, NotImplementedError):
    """A meta tensor's values were asked for (``item()``, ``tolist()``, ``numpy()``, a copy to
    the CPU): it has none. A ``NotImplementedError`` as PyTorch's "Cannot copy out of meta
    tensor; no data!"."""


class IndexOutOfRange(EmberError, IndexError, RuntimeError):
    """An index tensor or integer points outside the dimension it indexes. An IndexError as
    PyTorch's dimension and embedding errors are, and a RuntimeError as its ``gather`` and
    ``scatter`` ones are."""


class IndexTypeError(DTypeError, IndexError):
    """An index of a kind indexing cannot take (a float, an int16 tensor, a ragged list): an
    IndexError as PyTorch's, and a DTypeError (a TypeError) as Ember raised before."""


class IndexShapeError(ShapeError, IndexError):
    """Index tensors whose shapes do not broadcast together: an IndexError as PyTorch's, and a
    ShapeError as Ember raised before."""


class GradError(EmberError, RuntimeError):
    """Autograd cannot do what was asked: a freed graph, a modified saved tensor, …"""


class DerivativeNotImplemented(GradError, NotImplementedError):
    """A derivative PyTorch has not implemented either (``zeta`` with respect to ``x``,
    ``igamma`` with respect to ``a``, ``geqrf``): a ``NotImplementedError`` as PyTorch's, and a
    GradError as Ember raised before."""


class OpError(EmberError, RuntimeError):
    """An op failed for a reason no more specific class describes."""


class BatchedWriteError(OpError):
    """Under ``vmap``, an in-place op would write a batched value into an unbatched tensor,
    which has room for one sample only (a BatchNorm's running statistics in training mode).
    A RuntimeError as torch.func's refusal is."""


class DivisionByZero(OpError, ZeroDivisionError):
    """Integer division or remainder by zero, e.g. ``tensor([2]) // 0`` (floats give inf or
    nan instead), or an argument an op would divide by that is zero (``StepLR(opt, 0)``). A
    RuntimeError as PyTorch's is, and a ZeroDivisionError as Python's is."""


class ValueOverflow(OpError, OverflowError):
    """A number cannot be stored in a tensor's dtype without wrapping around, e.g.
    ``uint8_tensor.fill_(300)``."""


class IndexWriteOverflow(ValueOverflow, ValueError):
    """``x[i] = v`` of a Python int past int64, whatever ``x``'s dtype (``float_x[0] =
    2**63``): a ValueError as PyTorch's ``Overflow when unpacking long long`` is."""


class AllocationError(OpError, MemoryError):
    """A tensor too large for the memory there is (or for any array at all), e.g.
    ``zeros: cannot allocate shape (1099511627776,) float32 (4.0 TiB): not enough memory``.
    A RuntimeError as PyTorch's allocator errors are, and a MemoryError as NumPy's."""


class RecomputeError(GradError):
    """``checkpoint``'s recomputation did not reproduce its first run (a different number,
    shape or dtype of saved values). PyTorch's ``torch.utils.checkpoint.CheckpointError``:
    importable under that name from :mod:`ember.utils.checkpoint` (it is not
    :class:`CheckpointError`, which is about checkpoint files)."""


class UninitializedError(EmberError, ValueError):
    """A lazy module's parameter or buffer (``nn.UninitializedParameter``) was computed with
    before its first call gave it a shape. A ValueError, as PyTorch's."""


class CheckpointError(EmberError, ValueError):
    """A checkpoint file is truncated, corrupted or hostile, or an object cannot be saved.

    Messages name the file and the problem, e.g. ``ckpt.safetensors: tensor 'fc.weight':
    data_offsets [0, 4096] run past the end of the data (1024 bytes); the file is truncated``.
    """


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """``ember.load`` refused a checkpoint holding pickled objects (a whole module, a tensor
    subclass) because ``weights_only`` was not ``False``: a ``pickle.UnpicklingError``, as
    ``torch.load``'s weights-only refusal, so ``except pickle.UnpicklingError`` written for
    PyTorch catches it."""


def describe(shape: tuple[int, ...], dtype: object) -> str:
    """Formats a shape and dtype the way every message shows them: ``(3, 4) float32``."""
    return f"{tuple(shape)} {getattr(dtype, 'name', dtype)}"


def type_name(value: object) -> str:
    """The name of ``value``'s type as a user would write it: bare for Python's, Ember's and a
    script's own (``list``, ``QuantizedTensor``), else with its package where the package
    exports it (``numpy.ndarray``, ``torch.Tensor``: a PyTorch tensor named ``Tensor`` would
    puzzle), or its full module path (``torch.nn.parameter.Parameter``).

    Example:
        >>> type_name(np.ones(2)), type_name([1])
        ('numpy.ndarray', 'list')
    """
    kind = type(value)
    module = kind.__module__
    package = module.partition(".")[0]
    if package in ("builtins", "ember", "__main__"):
        return kind.__qualname__
    exported = getattr(sys.modules.get(package), kind.__qualname__, None) is kind
    return f"{package if exported else module}.{kind.__qualname__}"


def not_a_tensor_error(op: str, name: str, value: object, many: bool = False) -> TypeError:
    """PyTorch's ``TypeError`` for an argument of ``op`` that should be a tensor (``many``:
    a sequence of tensors) and is not, e.g. ``conv2d(): argument 'input' must be Tensor, not
    list``; for the error path of a check that reads a tensor's attribute off ``value``. (A
    plain TypeError, whose message the hook of :class:`EmberError` names the composite in.)"""
    kind = type_name(value)
    if many:
        message = (f"{op}(): argument '{name}' must hold Tensors, not {kind}. Hint: convert "
                   "each with ember.tensor(...)")
    else:
        message = (f"{op}(): argument '{name}' must be Tensor, not {kind}. Hint: convert it "
                   "with ember.tensor(...) or ember.as_tensor(...)")
    return TypeError(_message_hook(message) if _message_hook is not None else message)


def bool_flag(op: str, name: str, value: object) -> bool:
    """``value`` if it is a Python bool, else PyTorch's TypeError for a flag of ``op`` (a
    ``set_grad_enabled("no")`` would turn recording on, ``topk(x, 2, largest=0)`` be read
    as False: PyTorch takes no int, NumPy bool or tensor either).

    Example:
        >>> bool_flag("sort", "descending", 1)
        Traceback (most recent call last):
        ember.errors.ArgumentTypeError: sort(): argument 'descending' must be bool, not int...
    """
    if type(value) is not bool:
        raise ArgumentTypeError(f"{op}(): argument '{name}' must be bool, not "
                                f"{type_name(value)}. Hint: pass True or False")
    return value


def refuse_non_tensor(op: str, name: str, value: object) -> None:
    """Raises :func:`not_a_tensor_error` when ``value`` is a plain Python, NumPy or PyTorch
    value (a number, None, a string, list, tuple, array or torch.Tensor) given where ``op``
    takes a tensor; returns for any other object (a tensor-like, whose own error or handler
    stands)."""
    if _is_foreign(value):
        raise not_a_tensor_error(op, name, value)


def _is_foreign(value: object) -> bool:
    """Whether ``value`` is a plain Python, NumPy or PyTorch value (not a tensor-like)."""
    return type(value).__module__.partition(".")[0] in ("builtins", "numpy", "torch")


def refuse_non_tensors(op: str, name: str, values: Iterable[object]) -> None:
    """:func:`refuse_non_tensor` for each of ``values``, ``op``'s sequence of tensors
    ``name``: a plain Python, NumPy or PyTorch value among them raises
    :func:`not_a_tensor_error` (``many``).

    Example:
        >>> refuse_non_tensors("dstack", "tensors", [ember.ones(2), np.ones(2)])
        Traceback (most recent call last):
        TypeError: dstack(): argument 'tensors' must hold Tensors, not numpy.ndarray. Hint: ...
    """
    for value in values:
        if _is_foreign(value):
            raise not_a_tensor_error(op, name, value, many=True)


def _dtype_query(flag: str, kind: str) -> Callable[[str, str, object], bool]:
    """A check whether the tensor ``value`` (``op``'s argument ``name``) has a ``kind`` dtype
    (its dtype's ``flag``); a plain Python, NumPy or PyTorch value raises
    :func:`not_a_tensor_error`."""
    def query(op: str, name: str, value: object) -> bool:
        try:
            dtype = value.dtype  # type: ignore[attr-defined]
            if type(dtype).__module__ == "torch":  # (torch.dtype has the flags too)
                raise AttributeError(flag)
            return getattr(dtype, flag)
        except AttributeError:
            refuse_non_tensor(op, name, value)
            raise
    query.__name__ = query.__qualname__ = f"is_{kind}_input"
    query.__doc__ = (f"Whether the tensor ``value`` (``op``'s argument ``name``) has a {kind} "
                     "dtype; a plain Python, NumPy or PyTorch value raises "
                     ":func:`not_a_tensor_error`.")
    return query


is_floating_input = _dtype_query("is_floating_point", "floating")
is_complex_input = _dtype_query("is_complex", "complex")


def dtype_name(op: str, name: str, value: object) -> str:
    """The name of the tensor ``value``'s dtype (``op``'s argument ``name``), for an error's
    message; a PyTorch tensor or NumPy array (whose dtype has no Ember name) raises
    :func:`not_a_tensor_error` instead (the error path only).

    Example:
        >>> dtype_name("one_hot", "input", ember.ones(2))
        'float32'
    """
    refuse_non_tensor(op, name, value)
    return value.dtype.name  # type: ignore[attr-defined]


def is_allocation_failure(error: Exception) -> bool:
    """Whether ``error``, raised by a backend making an array, says the array is too large:
    ``MemoryError``, or NumPy's ``ValueError`` for a size past what it can address."""
    return isinstance(error, MemoryError) or (isinstance(error, ValueError) and any(
        text in str(error) for text in ("too big", "Maximum allowed size exceeded",
                                        "Maximum allowed dimension exceeded")))


def allocation_error(op: str, shape: tuple[int, ...], dtype: object,
                     error: Exception) -> AllocationError:
    """The :class:`AllocationError` of ``op`` for ``error``, an allocation failure (see
    :func:`is_allocation_failure`) of an array of ``shape`` and ``dtype``."""
    too_big = not isinstance(error, MemoryError)
    count = 1
    for n in shape:
        count *= n
    size, units = float(count * getattr(dtype, "itemsize", 1)), ["B", "KiB", "MiB", "GiB",
                                                                  "TiB", "PiB", "EiB"]
    while size >= 1024 and len(units) > 1:
        size /= 1024
        units.pop(0)
    why = ("more than any array can hold" if too_big else "not enough memory. Hint: use a "
           "smaller size or batch, or free tensors that are no longer needed")
    return AllocationError(f"{op}: cannot allocate shape {tuple(shape)} "
                           f"{getattr(dtype, 'name', dtype)} ({size:.1f} {units[0]}): {why}")


_EMBER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that names the first line outside Ember's own
    code (the user's call), however deep inside Ember the warning is made.

    Example:
        >>> warnings.warn("careful", stacklevel=user_stacklevel())  # doctest: +SKIP
    """
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_EMBER_DIR):
        frame, level = frame.f_back, level + 1
    return level
