"""Making tensors: from data (``tensor``, ``as_tensor``, ``from_numpy``) and by shape
(``zeros``, ``ones``, ``full``, ``empty``, their ``_like`` forms, ``arange``, ``linspace``,
``eye``). Constants are not primitives: a trace sees them as data. The factories take
PyTorch's ``layout=`` (``ember.strided`` only) and ``pin_memory=`` (accepted; the CPU has
nothing to pin)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember import dtypes, layouts
from ember.backend import Device
from ember.backend import device as to_device
from ember.backend.memory_block import own_block
from ember.dtypes import DType
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    ShapeError,
    allocation_error,
    describe,
    is_allocation_failure,
    type_name,
)
from ember.layouts import (
    check_format,
    contiguous_format,
    format_of,
    memory_format,
    order_of,
    preserve_format,
    strided,
)
from ember.ops.argument_kind import not_a_number
from ember.ops.fits import (
    INT64_MAX,
    INT64_MIN,
    UINT64_END,
    check_fits,
    check_number_int,
    check_real,
    converts_unchecked,
    number_int_error,
)
from ember.ops.forwarding import check_tensors, hand_over_tensor_like, hands_over
from ember.ops.grad_flag import grad_flag
from ember.ops.int_args import as_int, as_ints
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import DISPATCH, refuse_limited
from ember.ops.public_op import argument_of
from ember.ops.spaced import evenly_spaced, refuse_bool, refuse_complex_steps, spaced_dtype, stepped
from ember.ops.tensor_data import (
    exact_ints,
    exact_uint64,
    infer_dtype,
    preserved_copy,
    read_data,
    read_objects,
    torch_memory,
    unreadable,
)
from ember.size import Size
from ember.tensor import Tensor, _wrap
from ember.version_counter import NumberCounter

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "range", "linspace", "eye"]


def _shape(size: tuple, op: str) -> tuple[int, ...]:
    """Reads ``zeros(2, 3)``, ``zeros((2, 3))`` and ``zeros([2, 3])`` alike."""
    if len(size) == 1 and type(size[0]) is not int and \
            (isinstance(size[0], Sequence) or np.ndim(size[0]) == 1):
        size = tuple(size[0])
    try:
        shape = as_ints(tuple(size), op, "each size")
    except TypeError:
        raise ArgumentTypeError(f"{op}: expected a shape of ints, got {size!r}") from None
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: sizes must be non-negative, got shape {shape}")
    return shape


def check_layout_type(op: str, layout: Any) -> None:
    """A ``layout=`` that is no layout at all (a string, a memory format) is a TypeError, as
    PyTorch's."""
    if layout is not None and not isinstance(layout, layouts.layout):
        raise ArgumentTypeError(f"{op}(): argument 'layout' must be ember.layout, not "
                                f"{type_name(layout)}. Hint: pass ember.strided")


def check_strided(op: str, layout: Any) -> None:
    """The ``layout=`` a factory takes, as PyTorch's: ``ember.strided`` (or None) only; what
    is no layout at all is a TypeError, as PyTorch's."""
    check_layout_type(op, layout)
    if layout is not None and layout is not strided:
        raise ArgumentError(f"{op}: makes dense tensors only, got layout={layout}. Hint: pass "
                            "ember.strided, or convert the result with .to_sparse()")


NO_SIZE: Any = object()  # (``size=``'s default: None is refused, as PyTorch's parser does)


def sequence_size(op: str, size: Any) -> tuple | list:
    """``size`` given as one argument (``size=``, or ``full``'s first), as PyTorch's parser
    takes it: a tuple or list of ints (an ``ember.Size``); a number, tensor, range or None is
    a TypeError."""
    if not isinstance(size, tuple | list):
        raise ArgumentTypeError(f"{op}(): argument 'size' must be tuple of ints, not "
                                f"{type_name(size)}. Hint: a tuple or list of ints, as size=(3,)")
    return size


def given_size(op: str, sizes: tuple, size: Any) -> tuple:
    """The size a factory got, positionally (``sizes``) or as ``size=`` (``NO_SIZE`` when not
    given), not both."""
    if size is NO_SIZE:
        return sizes
    sequence_size(op, size)
    if sizes:
        raise ArgumentTypeError(f"{op}() got multiple values for argument 'size': {sizes} "
                                f"positionally and size={size!r}")
    return (size,)


def _non_negative(op: str, name: str, value: int) -> int:
    """``value`` as an int, a ShapeError naming ``op`` if it is negative."""
    value = as_int(value, op, name)
    if value < 0:
        raise ShapeError(f"{op}: {name} must be non-negative, got {value}")
    return value


def _finish(array: Any, dev: Device, requires_grad: bool) -> Tensor:
    requires_grad = grad_flag(requires_grad)
    if requires_grad and dtypes.from_numpy(array.dtype).category < dtypes.FLOAT:
        raise DTypeError(f"only floating and complex tensors can require grad; this one is "
                         f"{dtypes.from_numpy(array.dtype).name}")
    return _wrap(array, dev, requires_grad)


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors).

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).dtype
        ember.int64
    """
    dev = to_device(device)
    if isinstance(data, Tensor):
        if data._device.is_meta and device is None:  # (it stays meta, as in PyTorch)
            return data.detach().to(dtype=dtype, copy=True).requires_grad_(requires_grad)
        array = data._data.copy() if data._data.flags.c_contiguous else preserved_copy(data._data)
    else:
        array, data = read_data(data)
        kind = array.dtype.kind
        if kind == "O" and not isinstance(data, np.ndarray):  # (Python data: a NumPy object
            array = read_objects(array, data, dtype)  # array is refused, as PyTorch refuses it)
            kind = array.dtype.kind
        if kind not in "biufc" and not dtypes.has_numpy(array.dtype):
            # (objects, strings, dates: not numbers; ml_dtypes' bfloat16 and float8 are)
            unreadable(data, f"non-numeric data {str(data)[:60]!r}")
        target = infer_dtype(array, data) if dtype is None else dtypes.to_dtype(dtype)
        if target is dtypes.uint64 and kind == "f":
            array = exact_uint64(data, array)
        if kind == "c":
            check_real("tensor", array, target)
        if array.size and kind in "iuf" and target.category == dtypes.INT:
            if kind == "f" and target is dtypes.int64 and type(data) in (list, tuple):
                array = exact_ints(data, array)  # (a float among ints: NumPy read float64)
            check_fits("tensor", array.min().item(), target)
            check_fits("tensor", array.max().item(), target)
        array = dtypes.cast_ready(np, array, target).astype(target.np, copy=False)
    if dtype is not None and array.dtype != dtypes.to_dtype(dtype).np:
        target = dtypes.to_dtype(dtype)
        array = dtypes.cast_ready(np, array, target).astype(target.np, copy=False)
    return _finish(dev.xp.asarray(array), dev, requires_grad)


def legacy_tensor(args: tuple, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """What ``Tensor(*args)`` makes, as ``torch.Tensor``: sizes (``Tensor(2, 3)``, a
    ``Size``, nothing) give uninitialised memory, data a copy in the default float dtype (a
    tensor keeps its own dtype)."""
    if len(args) == 1 and (isinstance(args[0], bool | float | complex | np.floating |
                                      np.complexfloating | np.bool_)):
        raise ArgumentTypeError(f"Tensor(): data must be a sequence, got "
                                f"{type(args[0]).__name__} {args[0]!r}. Hint: "
                                f"ember.tensor({args[0]!r}) makes a 0-d tensor")
    if len(args) == 1 and not isinstance(args[0], int | np.integer):
        data = args[0]
        if dtype is None and not isinstance(data, Tensor | Size):
            dtype = dtypes.get_default_dtype()
        if not isinstance(data, Size):
            return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
    return empty(*(args or (0,)), dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like :func:`tensor`, but shares memory with ``data`` where it can (no copy): a tensor, a
    NumPy array, or a CPU ``torch.Tensor`` not requiring grad, of ``dtype`` or with none given.

    Example:
        >>> ember.as_tensor(np.zeros(3)).dtype
        ember.float64
    """
    if isinstance(data, Tensor):
        if dtype is None or dtypes.to_dtype(dtype) is data.dtype:
            return data if device is None else data.to(device)
        return data.to(dtypes.to_dtype(dtype))
    if not isinstance(data, np.ndarray):  # (a CPU torch.Tensor: its memory, as torch's)
        data = memory if (memory := torch_memory(data)) is not None else data
    if isinstance(data, np.ndarray) and (dtype is None or dtypes.to_dtype(dtype).np == data.dtype):
        return from_numpy(data) if device is None else from_numpy(data).to(device)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (changes show in both); its storage starts
    at the array's first element, as PyTorch's (``storage_offset()`` is 0 for a slice too).

    Example:
        >>> a = np.arange(3.0); t = ember.from_numpy(a); a[0] = 7; t[0].item()
        7.0
    """
    if not isinstance(array, np.ndarray):
        raise ArgumentTypeError(f"from_numpy: expected a numpy.ndarray, got "
                                f"{type_name(array)}")
    dtypes.from_numpy(array.dtype)  # a clear error for unsupported dtypes
    if type(array) is not np.ndarray:  # (np.matrix, a masked array: their memory as a plain
        array = array.view(np.ndarray)  # array, as PyTorch reads them; a matrix's sum(0) is 2-D)
    return share_array(own_block(array))


def share_array(array: np.ndarray) -> Tensor:
    """A CPU tensor over ``array``'s memory whose storage is the whole block ``array`` lies in
    (io's views of a loaded storage); ``from_numpy`` without its checks."""
    t = _wrap(array, to_device("cpu"))
    t._vc.shared = True  # (the caller holds the array: its writes move no version counter)
    return t


def _make(op: str, fill: Any, size: tuple, dtype: Any, device: Any, requires_grad: bool,
          fmt: memory_format = contiguous_format) -> Tensor:
    dev = to_device(device)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    shape = _shape(size, op)
    if fill is not None and fill != 0 and fill != 1:  # (0 and 1 fit every dtype)
        check_number_int(op, fill)
        if not converts_unchecked(dt, fill_numel=math.prod(shape)):
            check_fits(op, fill, dt)
    xp = dev.xp
    if fmt.dims is not None:  # made in the format's order, viewed back in shape's
        dims, inverse = order_of(op, fmt, shape)
        made = _make(op, fill, (tuple(shape[d] for d in dims),), dt, dev, False)
        return _finish(made._data.transpose(inverse), dev, requires_grad)
    try:
        if fill is None:
            array = xp.empty(shape, dt.np)
        elif type(fill) is int and fill == 0:  # (-0.0 keeps its sign through full)
            array = xp.zeros(shape, dt.np)
        else:  # (through an array, so that -1 wraps into uint8 as in PyTorch)
            array = xp.full(shape, np.asarray(dtypes.cast_ready(np, fill, dt)).astype(dt.np))
    except (MemoryError, ValueError) as exc:
        if is_allocation_failure(exc):
            raise allocation_error(op, shape, dt, exc) from exc
        if isinstance(fill, numbers.Number) or hasattr(fill, "dtype"):
            raise
        raise not_a_number(fill) from None  # (a string, a tuple: no fill value)
    return _finish(array, dev, requires_grad)


def zeros(*sizes: Any, size: Any = NO_SIZE, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros: ``ember.zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``."""
    check_strided("zeros", layout)
    return _make("zeros", 0, given_size("zeros", sizes, size), dtype, device, requires_grad)


def ones(*sizes: Any, size: Any = NO_SIZE, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of ones: ``ember.ones(2, 3)``, ``ones((2, 3))`` or ``ones(size=(2, 3))``."""
    check_strided("ones", layout)
    return _make("ones", 1, given_size("ones", sizes, size), dtype, device, requires_grad)


def empty(*sizes: Any, size: Any = NO_SIZE, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, memory_format: memory_format = contiguous_format,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor whose values are whatever memory held: ``ember.empty(2, 3)``; laid out in
    ``memory_format`` (e.g. ``ember.channels_last`` for a 4-d shape).

    Example:
        >>> ember.empty(1, 3, 2, 2, memory_format=ember.channels_last).stride()
        (12, 1, 6, 3)
    """
    check_strided("empty", layout)
    if check_format("empty", memory_format) is preserve_format:
        raise ShapeError("empty: preserve_format needs a tensor to preserve the layout of; "
                         "use empty_like, or contiguous_format / channels_last here")
    return _make("empty", None, given_size("empty", sizes, size), dtype, device, requires_grad,
                 memory_format)


def fill_number(value: Tensor | np.ndarray) -> Any:
    """The number a fill tensor stands for, as PyTorch's parser reads a number argument: a 0-d
    tensor that requires no grad; any other, and any NumPy array, is refused, naming the op
    and argument (a one-element 1-D tensor or array filled silently; a fill that requires grad
    would drop its graph).

    Example:
        >>> fill_number(ember.tensor(3))
        3
    """
    if isinstance(value, np.ndarray) or value.ndim or value.requires_grad:
        op, name, _, _ = argument_of(value) or ("full", "fill_value", "", None)
        kind = "a numpy.ndarray" if isinstance(value, np.ndarray) else "a Tensor"
        what = (f"{kind} of shape {describe(value.shape, value.dtype)}"
                if value.ndim or kind != "a Tensor" else "a 0-d Tensor that requires grad")
        keep = "" if kind != "a Tensor" else f" (or {name}.expand(size) to keep its gradient)"
        raise ArgumentTypeError(f"{op}(): argument '{name}' must be a number, not {what}. Hint: "
                                f"pass {name}.item(){keep}")
    return value.item()


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows it as in PyTorch.

    Example:
        >>> ember.full((2,), 7).dtype
        ember.int64
    """
    check_strided("full", layout)
    if isinstance(fill_value, Tensor | np.ndarray):  # (an int8 0-d tensor fills int64)
        fill_value = fill_number(fill_value)
    if dtype is None or type(fill_value) not in (int, float, bool):  # (with a dtype too: None
        try:  # made an uninitialised tensor, [5, 6] filled the shape (2,) with 5 and 6)
            inferred = dtypes.number_dtype(fill_value)
        except DTypeError:
            raise not_a_number(fill_value) from None
        dtype = inferred if dtype is None else dtype
    return _make("full", fill_value, (sequence_size("full", size),), dtype, device, requires_grad)


def _like(op: Callable, fill: Any, t: Tensor, dtype: Any, device: Any, requires_grad: bool,
          layout: Any, fmt: Any, *args: Any) -> Tensor:
    """``op(t, *args, …)``: ``fill`` in ``t``'s shape, with ``t``'s dtype, device and memory
    format unless given (``preserve_format``, also ``None``, keeps a channels-last layout,
    as :meth:`Tensor.clone` does); a tensor-like ``t`` (a DTensor, an fx Proxy) hands it over
    (``fmt`` None if not given: a sparse tensor refuses any given one, as PyTorch's)."""
    check_layout_type(op.__name__, layout)
    if type(t) in TENSOR_LIKE:
        kwargs = {"dtype": dtype, "device": device, "requires_grad": requires_grad,
                  "memory_format": fmt}
        if layout is not None and layout is not getattr(t, "layout", None):
            kwargs["layout"] = layout  # (a sparse tensor's zeros_like(s, layout=strided))
        return handle(op, (t, *args), kwargs)
    name = op.__name__
    check_tensors(name, input=t)
    check_strided(name, layout)
    fmt = preserve_format if fmt is None else check_format(name, fmt)
    if DISPATCH.handler is not None:
        made = made_per_sample(t, lambda src: op(src, *args, dtype=dtype, device=device,
                                                 requires_grad=requires_grad,
                                                 memory_format=fmt))
        if made is not None:
            return made
    return _make(name, fill, (t.shape,), t.dtype if dtype is None else dtype,
                 t.device if device is None else device, requires_grad,
                 format_of(t) if fmt is preserve_format else fmt)


def made_per_sample(t: Tensor, make: Callable[[Tensor], Tensor]) -> Tensor | None:
    """Under a transform: the tensor ``make(t)`` as the transform batching ``t`` makes it, or
    None when none does. Inside ``vmap`` a tensor made from a batched ``t`` (``zeros_like(t)``,
    ``t.new_zeros(n)``) is batched too, as in PyTorch, so per-sample writes into it work: the
    vmap level runs ``make`` on ``t``'s batch (hook ``made_from(t, make)``)."""
    stack = DISPATCH.stack
    for handler in reversed(stack[:stack.index(DISPATCH.handler) + 1]):
        hook = getattr(handler, "made_from", None)
        if hook is not None and (made := hook(t, make)) is not None:
            return made
    return None


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None,
               memory_format: memory_format | None = None) -> Tensor:
    """Zeros with ``input``'s shape, dtype, device and layout (``memory_format``)."""
    return _like(zeros_like, 0, input, dtype, device, requires_grad, layout, memory_format)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None,
              memory_format: memory_format | None = None) -> Tensor:
    """Ones with ``input``'s shape, dtype, device and layout (``memory_format``)."""
    return _like(ones_like, 1, input, dtype, device, requires_grad, layout, memory_format)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None,
               memory_format: memory_format | None = None) -> Tensor:
    """Uninitialised memory with ``input``'s shape, dtype, device and layout (``memory_format``)."""
    return _like(empty_like, None, input, dtype, device, requires_grad, layout, memory_format)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None,
              memory_format: memory_format | None = None) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape, dtype, device and layout
    (``memory_format``)."""
    if isinstance(fill_value, Tensor | np.ndarray):
        fill_value = fill_number(fill_value)
    elif not isinstance(fill_value, numbers.Number) and getattr(fill_value, "ndim", 1):
        raise not_a_number(fill_value)  # (a sequence would broadcast into input's shape)
    return _like(full_like, fill_value, input, dtype, device, requires_grad, layout,
                 memory_format, fill_value)


def _numbers(op: str, *values: Any) -> list:
    """``values`` (numbers, or None) with 0-d tensors read as the numbers they hold; a
    TypeError naming ``op`` for anything else."""
    numbers = [v.item() if isinstance(v, Tensor) else v for v in values]
    for v in numbers:
        if v is not None and not isinstance(v, int | float | np.number):
            hand_over_tensor_like(v, op)
            raise ArgumentTypeError(f"{op}: expected a number (or a 0-d tensor), got {v!r}")
    return numbers


@hands_over
def arange(start: float = 0, end: float | None = None, step: float = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False, layout: Any = None,
           pin_memory: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``ember.arange(5)``.

    Integer arguments give int64; any float argument gives the default float dtype. An
    integer ``dtype`` truncates ``start``, ``end`` and ``step`` to integers first, as PyTorch
    does.

    Example:
        >>> ember.arange(-2.5, 2.5, dtype=ember.int64)
        tensor([-2, -1,  0,  1])
    """
    check_strided("arange", layout)
    start, end, step = _numbers("arange", start, end, step)
    if end is None:
        start, end = 0, start
    dt = dtypes.to_dtype(dtypes.number_dtype(start, end, step) if dtype is None else dtype)
    refuse_bool("arange", dt)
    refuse_complex_steps("arange", dt)
    for v in (start, end, step):  # (PyTorch counts an integer range in int64)
        if dt.category < dtypes.FLOAT and isinstance(v, int):
            check_fits("arange", v, dtypes.int64)
        check_number_int("arange", v)  # (2**64 in a float range: no NumPy isfinite error)
    if step == 0:
        raise ArgumentError("arange: step must be nonzero")
    if not all(np.isfinite(v) for v in (start, end, step)):
        raise ArgumentError(f"arange: unsupported range {start} to {end} by {step}: start, end "
                            f"and step must be finite")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange: the range {start} to {end} goes against the sign of step "
                            f"{step}. Hint: swap start and end, or negate step")
    refuse_limited("arange", dt)
    dev = to_device(device)
    if dt is dtypes.int64 and int(step) == 0:  # (the bounds and step truncated first)
        raise ArgumentError(f"arange: step {step} truncates to 0 in {dt.name}. Hint: pass a "
                            "float dtype, or an integer step")
    try:
        return _finish(_arange_array(dev, start, end, step, dt), dev, requires_grad)
    except (MemoryError, ValueError) as exc:
        if not is_allocation_failure(exc):
            raise
        n = max(0, int(np.ceil((end - start) / step)))
        raise allocation_error("arange", (n,), dt, exc) from exc


_STEPPED = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _arange_array(dev: Device, start: float, end: float, step: float, dt: dtypes.DType) -> Any:
    xp = dev.xp
    if dt.category >= dtypes.FLOAT:
        n = max(0, int(np.ceil((end - start) / step)))
        if dt in _STEPPED and not dev.is_meta:  # (PyTorch's values, bit for bit)
            return stepped(xp, float(start), float(step), n, dt.np)
        return (start + step * xp.arange(n, dtype=np.float64)).astype(dt.np)
    if dt is not dtypes.int64:  # PyTorch counts the float range, then steps by int(step)
        n = max(0, int(np.ceil((end - start) / step)))
        return (int(start) + int(step) * xp.arange(n, dtype=np.int64)).astype(dt.np)
    return xp.arange(int(start), int(end), int(step), dtype=np.int64)


def range(start: float, end: float, step: float = 1, *,  # noqa: A001
          dtype: Any = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None) -> Tensor:
    """Values from ``start`` to ``end`` *inclusive* by ``step``, in the default float dtype
    unless ``dtype`` is given: PyTorch's deprecated ``torch.range`` (it warns, as PyTorch
    does; ``arange`` excludes ``end``).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.range(1, 2, 0.5)
        tensor([1.0000, 1.5000, 2.0000])
    """
    warnings.warn("ember.range is deprecated, as torch.range is: its end is inclusive, unlike "
                  "Python's range. Use ember.arange, which stops before end", UserWarning,
                  stacklevel=2)
    check_strided("range", layout)
    start, end, step = _numbers("range", start, end, step)
    for v in (start, end, step):
        check_number_int("range", v)
    if step == 0:
        raise ArgumentError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise ArgumentError(f"range: the range {start} to {end} goes against the sign of step "
                            f"{step}. Hint: swap start and end, or negate step")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    refuse_bool("range", dt)
    refuse_complex_steps("range", dt)
    dev = to_device(device)
    n = int(np.floor((end - start) / step)) + 1
    array = (start + step * dev.xp.arange(n, dtype=np.float64)).astype(dt.np)
    return _finish(array, dev, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (complex ends give
    the default complex dtype)."""
    check_strided("linspace", layout)
    steps = _non_negative("linspace", "steps", steps)
    dt = spaced_dtype("linspace", start, end, dtype, steps)
    dev = to_device(device)
    try:
        array = evenly_spaced(start, end, steps, dt.np)
    except (MemoryError, ValueError) as exc:
        if not is_allocation_failure(exc):
            raise
        raise allocation_error("linspace", (steps,), dt, exc) from exc
    return _finish(dev.xp.asarray(array), dev, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """The ``n × m`` identity matrix (``m`` defaults to ``n``)."""
    check_strided("eye", layout)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    dev = to_device(device)
    n = _non_negative("eye", "n", n)
    m = n if m is None else _non_negative("eye", "m", m)
    try:
        array = dev.xp.eye(n, m, dtype=dt.np)
    except (MemoryError, ValueError) as exc:
        if not is_allocation_failure(exc):
            raise
        raise allocation_error("eye", (n, m), dt, exc) from exc
    return _finish(array, dev, requires_grad)


def scalar_tensor(value: Any, dtype: DType, dev: Device) -> Tensor:
    """A 0-d constant of ``dtype`` on ``dev`` (how Python scalars enter ops)."""
    kind = type(value)  # (a float dtype's NumPy takes a wide int; np.uint64 would wrap)
    if kind is int and not INT64_MIN <= value < UINT64_END or \
            kind is np.uint64 and value > INT64_MAX:
        raise number_int_error("", value)
    if dtype is dtypes.float16 or dtype is dtypes.float8_e4m3fn or dtype is dtypes.float8_e8m0fnu:
        value = dtypes.cast_ready(dev.xp, value, dtype)  # (as PyTorch converts: float16
        # through float32, float8_e4m3fn saturating, float8_e8m0fnu unsigned)
    try:
        return _wrap(dev.xp.asarray(value, dtype=dtype.np), dev, vc=NumberCounter())
    except (TypeError, ValueError):  # (a tensor-like's TensorLikeOperand is its handler's)
        if isinstance(value, int) and (dtype.is_floating_point or dtype.is_complex):
            # ml_dtypes' floats (bfloat16, float8) take no int past int64: go through float64,
            # as NumPy's own floats do (float() raises OverflowError past float64's range)
            return _wrap(dev.xp.asarray(float(value)).astype(dtype.np), dev, vc=NumberCounter())
        if isinstance(value, numbers.Number) or type(value).__module__ not in ("builtins",
                                                                                 "numpy"):
            raise
        raise not_a_number(value) from None
    except OverflowError:  # wraps around, as PyTorch's integer arithmetic does
        if not INT64_MIN <= value < UINT64_END:  # (an int subclass: no dtype holds it)
            raise number_int_error("", value) from None
        return _wrap(dev.xp.asarray(value).astype(dtype.np), dev)
