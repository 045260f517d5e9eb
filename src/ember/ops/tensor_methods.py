"""Tensor methods PyTorch code calls often that are small compositions: questions about a
tensor (``ndimension``, ``is_signed``, ``type()``), ``positive``, ``cpu``, ``sum_to_size``, and
the in-place shape ops (``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``,
``swapaxes_``/``swapdims_``). The constructors from a tensor (``new_zeros``, ``new_tensor``,
…) are in :mod:`ember.ops.new_constructors`.

The in-place shape ops change the tensor object's own shape: the tensor becomes the view the
out-of-place op would return (same memory, same version counter) and takes its history, so
gradients flow as through the out-of-place op. Limitation: a view made from the tensor
*before* its shape changed still replays its view chain on the tensor, so writing through
such an old view afterwards is refused or wrong; make views after the shape change. They
are refused under transforms (vmap, jit, forward mode), which key values by shape.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ember import dtypes
from ember.autograd.grad_mode import GRAD, is_inference, refuse_inference_write
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DeviceError,
    DTypeError,
    GradError,
    OpError,
    ShapeError,
    is_complex_input,
    is_floating_input,
    refuse_non_tensor,
)
from ember.layouts import preserve_format
from ember.ops.activations import hardshrink, prelu
from ember.ops.arithmetic import div, mul, sub
from ember.ops.broadcast import broadcast_to, sum_to
from ember.ops.compare import ge, gt, le, lt, ne
from ember.ops.convert import to
from ember.ops.creation import tensor
from ember.ops.inplace import (
    _refuse_leaf_write,
    _tell_handlers,
    bind_inplace,
    inplace,
    transforms_follow,
)
from ember.ops.int_args import refused_ints
from ember.ops.legacy_tensor_types import TYPE_NAMES, TensorType
from ember.ops.primitive import DISPATCH, refuse_limited
from ember.ops.shape import read_sizes, squeeze, transpose, unsqueeze
from ember.ops.storage import as_strided
from ember.ops.transposes import t
from ember.tensor import STRUCTURE, Tensor, _wrap, method

__all__ = ["numel", "is_tensor", "is_floating_point", "is_complex", "is_nonzero", "is_signed",
           "is_same_size", "detach", "typename", "is_storage"]

# methods PyTorch has for functions defined elsewhere
method()(is_inference)
method()(hardshrink)
method()(prelu)
bind_inplace(divide_=div, true_divide_=div, multiply_=mul, subtract_=sub, greater_=gt,
             greater_equal_=ge, less_=lt, less_equal_=le, not_equal_=ne)


# -- questions -----------------------------------------------------------------------------------
@method()
def ndimension(self: Tensor) -> int:
    """The number of dimensions (``dim()``).

    Example:
        >>> ember.zeros(2, 3).ndimension()
        2
    """
    return self.ndim


@method()
def nelement(self: Tensor) -> int:
    """The number of elements (``numel()``).

    Example:
        >>> ember.zeros(2, 3).nelement()
        6
    """
    return self.numel()


@method()
def sparse_dim(self: Tensor) -> int:
    """The number of sparse dimensions: 0 for a dense tensor, as PyTorch's (sparse tensors
    answer for themselves).

    Example:
        >>> ember.zeros(2, 3).sparse_dim(), ember.zeros(2, 3).dense_dim()
        (0, 2)
    """
    return 0


@method()
def dense_dim(self: Tensor) -> int:
    """The number of dense dimensions: all of a dense tensor's (``dim()``), as PyTorch's.

    Example:
        >>> ember.zeros(2, 3).dense_dim()
        2
    """
    return self.ndim


@method()
def is_distributed(self: Tensor) -> bool:
    """False, as PyTorch's for every tensor (a legacy question; ``DTensor`` is distributed).

    Example:
        >>> ember.zeros(1).is_distributed()
        False
    """
    return False


@method()
def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed (floating and signed integer types).

    Example:
        >>> ember.zeros(1).is_signed(), ember.is_signed(ember.zeros(1, dtype=ember.uint8))
        (True, False)
    """
    try:
        return input.dtype.is_signed
    except AttributeError:  # (a NumPy array: its dtype has no is_signed)
        refuse_non_tensor("is_signed", "input", input)
        raise


@method()
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape.

    Example:
        >>> ember.zeros(2, 3).is_same_size(ember.ones(2, 3))
        True
    """
    if not isinstance(other, Tensor):  # (a number, list or array: a TypeError as torch's)
        refuse_non_tensor("is_same_size", "other", other)
    return tuple(input.shape) == tuple(other.shape)


@method()
def get_device(self: Tensor) -> int:
    """The CUDA device index, or -1 on the CPU.

    Example:
        >>> ember.zeros(1).get_device()
        -1
    """
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


Tensor.is_cpu = property(lambda self: self.device.type == "cpu",
                         doc="Whether the tensor is on the CPU.")


@method()
def is_complex(input: Tensor) -> bool:
    """Whether the dtype is complex (``ember.is_complex(x)``, ``x.is_complex()``).

    Example:
        >>> ember.tensor([1 + 2j]).is_complex(), ember.is_complex(ember.zeros(1))
        (True, False)
    """
    return is_complex_input("is_complex", "input", input)


@method()
def cpu(self: Tensor, memory_format: Any = preserve_format) -> Tensor:
    """The tensor on the CPU (itself when it is there already and ``memory_format`` is its
    layout's).

    Example:
        >>> ember.ones(1).cpu().device
        device(type='cpu')
    """
    if memory_format is preserve_format:  # (the common call: to's fast path)
        return to(self, device="cpu")
    return to(self, device="cpu", memory_format=memory_format)


def _type_name(x: Tensor) -> str:
    # PyTorch names the device of a non-CPU tensor: "torch.cuda.FloatTensor", "torch.meta..."
    where = "ember." if x.device.type == "cpu" else f"ember.{x.device.type}."
    return where + TYPE_NAMES[x.dtype]


#: the dtype of each type name ``x.type()`` gives ('ComplexFloatTensor', 'UInt16Tensor' too)
_NAMED_DTYPES = {name: dtype for dtype, name in TYPE_NAMES.items()}


def _named_dtype(name: str) -> dtypes.DType:
    """The dtype of a type name (``'torch.ComplexFloatTensor'``) or a dtype's name; a
    ValueError as PyTorch's for others."""
    prefix, _, short = name.rpartition(".")
    if prefix in ("", "ember", "torch") and short in _NAMED_DTYPES:
        return _NAMED_DTYPES[short]
    if not name.endswith("Tensor"):
        try:
            return dtypes.to_dtype(name)
        except DTypeError:
            pass
    raise ArgumentError(f"type: invalid type {name!r}; expected a type name such as "
                        f"'ember.FloatTensor' (known: {', '.join(_NAMED_DTYPES)}) or a dtype")


@method("type")
def type_(self: Tensor, dtype: Any = None, non_blocking: bool = False, *,
          memory_format: Any = preserve_format, **kwargs: Any) -> Any:
    """With no dtype, the type's name, as PyTorch's (``'ember.FloatTensor'`` where PyTorch
    says ``'torch.FloatTensor'``); else the tensor converted to ``dtype``: a dtype, a legacy
    type such as ``ember.DoubleTensor``, or its name (``'ember.DoubleTensor'``,
    ``'torch.LongTensor'``, ``'torch.cuda.FloatTensor'``), laid out in ``memory_format``.

    Example:
        >>> ember.zeros(1).type()
        'ember.FloatTensor'
        >>> ember.zeros(1).type(ember.int64).dtype, ember.zeros(1).type(ember.IntTensor).dtype
        (ember.int64, ember.int32)
    """
    if set(kwargs) - {"async"} or type(kwargs.get("async", non_blocking)) is not bool or \
            type(non_blocking) is not bool:  # ('async': the old name of non_blocking)
        wrong = next((k for k in kwargs if k != "async"), None)
        raise ArgumentTypeError(f"type: unexpected keyword argument {wrong!r}" if wrong else
                                "type: non_blocking must be a bool")
    if dtype is None:
        return _type_name(self)
    if isinstance(dtype, str):
        on_cuda = ".cuda." in dtype
        return to(self, dtype=_named_dtype(dtype.replace(".cuda.", ".")),
                  device="cuda" if on_cuda else self.device, memory_format=memory_format)
    if isinstance(dtype, TensorType):
        dtype = dtype.dtype
    return to(self, dtype=dtypes.to_dtype(dtype), memory_format=memory_format)


@method()
def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sums ``self`` down to ``size``, which it must be expandable from (the reverse of
    ``expand``).

    Example:
        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    size = read_sizes(size)
    try:
        shape = tuple(map(operator.index, size))
    except TypeError as exc:  # (a float, a string, a tensor of many elements: named)
        raise refused_ints(size, "sum_to_size", "size", exc) from None
    ok = len(shape) <= self.ndim and all(
        s == 1 or s == n for s, n in zip(shape[::-1], self.shape[::-1]))
    if not ok:
        raise ShapeError(f"sum_to_size: size {tuple(shape)} is not expandable to size "
                         f"{tuple(self.shape)}")
    refuse_limited("sum_to_size", self.dtype, dtypes.WIDE_UNSIGNED)
    if tuple(shape) != tuple(self.shape) and self.dtype.category < dtypes.FLOAT:
        self = to(self, dtypes.int64)  # a sum of integers or bools is an int64, as PyTorch's
    return sum_to(self, tuple(shape))


# -- in-place shape ops --------------------------------------------------------------------------
def _reshape_in_place(x: Tensor, name: str, view: Callable[[Tensor], Tensor]) -> Tensor:
    """Makes ``x`` the view ``view(x)`` in place: the same memory with a new shape, and the
    view's history. The version counter moves, as PyTorch's: a node that saved ``x`` would
    otherwise read it in its new shape (a silently wrong gradient)."""
    if x._vc.inference and not GRAD.inference:
        refuse_inference_write(x, name)
    if GRAD.enabled:
        _refuse_leaf_write(x, name)
    if DISPATCH.handler is not None and not transforms_follow(x, name):
        raise OpError(f"{name}: in-place shape changes are not supported inside this "
                      "transform. Hint: use the out-of-place form")
    alias = _wrap(x._data, x._device, x.requires_grad, x._node, x._idx, x._vc)
    alias._view = x._view
    if DISPATCH.stack:  # (forward mode gives the alias x's tangent, and x the view's after)
        _tell_handlers("on_reshape_alias", alias, x)
    out = view(alias)
    if out._data.size and not x._device.xp.may_share_memory(out._data, x._data):
        raise OpError(f"{name}: the result is not a view of the tensor")
    x._data = out._data
    if GRAD.enabled:  # (under no_grad the tensor keeps its history: a leaf stays a leaf)
        x._node, x._idx, x._requires_grad = out._node, out._idx, out.requires_grad
    x._vc.value += 1
    x._view = out._view
    if x._view is not None:
        x._view.version = x._vc.value  # (its history is the one just made)
        x._view.shown = alias._view and alias._view.shown  # (PyTorch's x stays no view)
    STRUCTURE.value += 1  # (compiled functions see a tensor of another shape)
    if DISPATCH.stack:
        _tell_handlers("on_reshaped", x, out)
    return x


@method()
def as_strided_(self: Tensor, size: Any, stride: Any, storage_offset: int | None = None
                ) -> Tensor:
    """In-place :func:`ember.as_strided`: ``self`` becomes that (read-only) view of its
    storage, with its history.

    Example:
        >>> ember.arange(6.0).as_strided_((2, 2), (1, 2))
        tensor([[0., 2.],
                [1., 3.]])
    """
    return _reshape_in_place(self, "as_strided_",
                             lambda x: as_strided(x, size, stride, storage_offset))


@method()
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place :func:`unsqueeze`: inserts a size-1 dimension at ``dim`` into ``self``.

    Example:
        >>> ember.zeros(3).unsqueeze_(0).shape
        ember.Size([1, 3])
    """
    return _reshape_in_place(self, "unsqueeze_", lambda x: unsqueeze(x, dim))


@method()
def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    """In-place :func:`squeeze`: removes size-1 dimensions (all, or ``dim``) from ``self``.

    Example:
        >>> ember.zeros(1, 3, 1).squeeze_().shape
        ember.Size([3])
    """
    return _reshape_in_place(self, "squeeze_", lambda x: squeeze(x, dim))


@method()
def t_(self: Tensor) -> Tensor:
    """In-place :func:`t`: transposes a matrix (0-d and 1-d tensors stay as they are).

    Example:
        >>> ember.zeros(2, 3).t_().shape
        ember.Size([3, 2])
    """
    return _reshape_in_place(self, "t_", t)


@method("transpose_", "swapaxes_", "swapdims_")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place :func:`transpose` (also ``swapaxes_``, ``swapdims_``).

    Example:
        >>> ember.zeros(2, 3, 4).transpose_(0, 2).shape
        ember.Size([4, 3, 2])
    """
    return _reshape_in_place(self, "transpose_", lambda x: transpose(x, dim0, dim1))


# -- Python callables per element ---------------------------------------------------------------
def _per_element(self: Tensor, name: str, fn: Callable[..., Any], *others: Tensor) -> Tensor:
    """Writes ``fn(element of self, elements of others…)`` into ``self``, element by element."""
    for x in (self, *others):
        if x.requires_grad:
            raise GradError(f"{name}: can't call {name}() with a tensor that requires grad "
                            f"(shape {tuple(x.shape)}). Hint: detach it first, "
                            f"x.detach().{name}(...)")
        if x.dtype is not self.dtype:
            raise DTypeError(f"{name}: expected the other tensor to have self's dtype "
                             f"{self.dtype.name}, got {x.dtype.name}. Hint: convert it with "
                             f".to({self.dtype.name})")
    if self.device.type != "cpu":
        raise DeviceError(f"{name}: implemented for CPU tensors only, got one on "
                          f"{self.device}. Hint: move it with .cpu() first")
    columns = [t.detach().reshape(-1).tolist() for t in (self, *others)]
    values = [fn(*v) for v in zip(*columns)]
    return inplace(self, name, lambda old: tensor(values, dtype=self.dtype).reshape(self.shape))


@method()
def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:
    """Replaces each element ``v`` of ``self`` by ``callable(v)`` (a Python number), in
    place; slow, CPU only, as in PyTorch.

    Example:
        >>> ember.arange(3).apply_(lambda v: v * 2)
        tensor([0, 2, 4])
    """
    return _per_element(self, "apply_", callable)


@method()
def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """Replaces each element ``a`` of ``self`` by ``callable(a, b)``, ``b`` the element of
    ``tensor`` (broadcast to ``self``'s shape) at its position, in place; CPU only.

    Example:
        >>> ember.ones(2, 2).map_(ember.tensor([1.0, 2.0]), lambda a, b: a + b)
        tensor([[2., 3.],
                [2., 3.]])
    """
    return _per_element(self, "map_", callable, broadcast_to(tensor, tuple(self.shape)))


# -- top-level questions ---------------------------------------------------------------------------
def numel(input: Tensor) -> int:
    """The number of elements of ``input``.

    Example:
        >>> ember.numel(ember.zeros(2, 3))
        6
    """
    if not isinstance(input, Tensor):
        refuse_non_tensor("numel", "input", input)  # (a PyTorch tensor's own would answer)
    return input.numel()


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an Ember tensor.

    Example:
        >>> ember.is_tensor(ember.zeros(1)), ember.is_tensor([1.0])
        (True, False)
    """
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input``'s dtype is a floating type.

    Example:
        >>> ember.is_floating_point(ember.zeros(1)), ember.is_floating_point(ember.arange(2))
        (True, False)
    """
    return is_floating_input("is_floating_point", "input", input)


@method()
def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (any other size is an error).

    Example:
        >>> ember.is_nonzero(ember.tensor([0.5]))
        True
    """
    if not isinstance(input, Tensor):
        refuse_non_tensor("is_nonzero", "input", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input)


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same memory, with no history and not requiring grad.

    Example:
        >>> ember.detach(ember.ones(2, requires_grad=True)).requires_grad
        False
    """
    if not isinstance(input, Tensor):
        refuse_non_tensor("detach", "input", input)  # (a PyTorch tensor's own would answer)
    return input.detach()


@method("output_nr")
@property
def output_nr(self: Tensor) -> int:
    """Which output of the primitive that made it this tensor is (0 for a leaf). Ember builds
    some of PyTorch's multi-output ops (``split``, ``unbind``) from one primitive per piece,
    whose pieces are each output 0.

    Example:
        >>> x = ember.ones(2, 2, requires_grad=True)
        >>> x.output_nr, ember.linalg.eigh(x).eigenvectors.output_nr
        (0, 1)
    """
    return self._idx if self._node is not None else 0


def typename(obj: Any) -> str:
    """The type of ``obj`` as a string: ``tensor.type()`` for a tensor (``"ember.FloatTensor"``),
    else the qualified name of ``obj`` (a class or function) or of its class.

    Example:
        >>> ember.typename(ember.zeros(1)), ember.typename(3)
        ('ember.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):
        module = getattr(obj, "__module__", "") or ""
        name = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage object (``x.untyped_storage()``, ``x.storage()``).

    Example:
        >>> ember.is_storage(ember.zeros(1)), ember.is_storage(ember.zeros(1).untyped_storage())
        (False, True)
    """
    from ember.ops.storage_objects import TypedStorage, UntypedStorage

    return isinstance(obj, (UntypedStorage, TypedStorage))
