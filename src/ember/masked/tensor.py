"""``MaskedTensor``: a tensor's data together with a bool mask of the same shape that says which
elements are specified, as ``torch.masked.MaskedTensor``.

Elementwise ops act on the data and keep the mask, reductions skip masked-out elements and
mask out the slices that had none, and shape ops move data and mask together (the tables are
in :mod:`ember.masked.op_table`). Autograd goes through the data: a MaskedTensor made with
``requires_grad=True`` gets a MaskedTensor ``.grad`` with its own mask. It is its own class, not
an :class:`ember.Tensor`, so ordinary tensors' ops never look at it and pay nothing for it.
"""

from __future__ import annotations

from typing import Any

import ember
from ember.errors import ArgumentError, ArgumentTypeError, type_name
from ember.masked.tensor_repr import masked_tensor_repr
from ember.ops.overrides import TensorLikeOperand, outermost_op
from ember.tensor import Tensor

__all__ = ["MaskedTensor", "masked_tensor", "as_masked_tensor"]

_SUPPORTED_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")


def _check(data: Any, mask: Any) -> None:
    for name, value in (("data", data), ("mask", mask)):
        if not isinstance(value, Tensor):
            raise TypeError(f"MaskedTensor: {name} must be an ember.Tensor, got "
                            f"{type(value).__name__}. Hint: wrap it with ember.tensor(...)")
    if mask.dtype != ember.bool:
        raise TypeError(f"MaskedTensor: mask must have dtype bool, got {mask.dtype}. Hint: "
                        "mask.bool()")
    if str(data.dtype).split(".")[-1] not in _SUPPORTED_DTYPES:
        raise TypeError(f"MaskedTensor: {data.dtype} is not supported; data must be one of "
                        f"{', '.join(_SUPPORTED_DTYPES)}")
    if tuple(data.shape) != tuple(mask.shape):
        raise ArgumentError(f"MaskedTensor: data of shape {tuple(data.shape)} and mask of shape "
                            f"{tuple(mask.shape)} must have the same shape")


class UnsupportedMethod(TypeError, AttributeError):
    """A Tensor method or attribute MaskedTensors lack: a TypeError, as torch's, and an
    AttributeError, so ``hasattr(mt, name)`` and ``getattr(mt, name, default)`` answer."""


class MaskedOperand(TensorLikeOperand, AttributeError):
    """A MaskedTensor used where a plain tensor or array is needed: an ``ember.*`` op reading
    its internals (``_data``) or converting it. The ops that take MaskedTensors catch it and
    hand the call to :func:`ember.masked.op_table.handle`; for the others it is the error.
    Without ``op``, the message names the outermost ``ember.ops`` function it passed through
    (found only when the message is read)."""

    def __init__(self, op: str | None = None) -> None:
        super().__init__(op)
        self.op = op

    def __str__(self) -> str:
        op = self.op or outermost_op(self.__traceback__)
        return (f"{op}: does not take a MaskedTensor, as in torch. Hint: use the "
                "MaskedTensor's methods (mt.exp(), mt.where(...)), or mt.to_tensor(fill) / "
                "mt.get_data() for a plain tensor")


class MaskedTensor:
    """Data with a bool mask; elements where the mask is False are unspecified.

    Args:
        data: the values (float16/32/64, bool, int8/16/32/64).
        mask: bool tensor of the same shape, True where a value is specified.
        requires_grad: make the MaskedTensor a leaf that accumulates a ``.grad``.

    Example:
        >>> data = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> mask = ember.tensor([[True, False, True], [False, False, False]])
        >>> mt = ember.masked.masked_tensor(data, mask, requires_grad=True)
        >>> mt.sum(1)
        MaskedTensor(
          [  4.0000,       --]
        )
        >>> mt.sum().backward()
        >>> mt.grad
        MaskedTensor(
          [
            [  1.0000,       --,   1.0000],
            [      --,       --,       --]
          ]
        )
    """

    __slots__ = ("_masked_data", "_mask")
    __hash__ = object.__hash__  # the comparison operators below are elementwise

    def __init__(self, data: Tensor, mask: Tensor, requires_grad: bool = False) -> None:
        _check(data, mask)
        self._masked_data = data.detach().clone().requires_grad_(requires_grad)
        self._mask = mask.detach().clone()

    @classmethod
    def _wrap(cls, data: Tensor, mask: Tensor) -> MaskedTensor:
        """A MaskedTensor over ``data`` as it is, graph included (what ops return)."""
        result = cls.__new__(cls)
        result._masked_data, result._mask = data, mask
        return result

    # what torch's MaskedTensor answers
    def get_data(self) -> Tensor:
        """The data, masked-out elements included; gradients flow back through it."""
        return self._masked_data

    def get_mask(self) -> Tensor:
        """The bool mask, True where an element is specified."""
        return self._mask

    def to_tensor(self, value: Any) -> Tensor:
        """A plain tensor with masked-out elements set to ``value`` (differentiable).

        Example:
            >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0]),
            ...                                 ember.tensor([True, False]))
            >>> mt.to_tensor(0.0)
            tensor([1., 0.])
        """
        return self._masked_data.masked_fill(~self._mask, value)

    def __repr__(self) -> str:
        return masked_tensor_repr(self._masked_data.detach().numpy(), self._mask.numpy())

    # autograd
    @property
    def requires_grad(self) -> bool:
        return self._masked_data.requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad: bool) -> None:
        self._masked_data.requires_grad = requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> MaskedTensor:
        self._masked_data.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._masked_data.is_leaf

    @property
    def grad(self) -> MaskedTensor | None:
        """The gradient of a leaf, a MaskedTensor with this one's mask (``None`` before any)."""
        grad = self._masked_data.grad
        return None if grad is None else MaskedTensor._wrap(grad, self._mask)

    @grad.setter
    def grad(self, grad: Any) -> None:
        self._masked_data.grad = grad._masked_data if isinstance(grad, MaskedTensor) else grad

    def retain_grad(self) -> None:
        """Keeps the ``.grad`` of this non-leaf MaskedTensor after ``backward``."""
        self._masked_data.retain_grad()

    def register_hook(self, hook: Any) -> Any:
        """Calls ``hook(grad)`` with this MaskedTensor's gradient (a MaskedTensor with its mask)
        when it is computed; a returned MaskedTensor or tensor replaces it. Returns a handle
        whose ``remove()`` takes the hook off.

        Example:
            >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0]),
            ...                                 ember.tensor([True, False]), requires_grad=True)
            >>> handle = mt.register_hook(lambda g: g * 3)
            >>> mt.sum().backward()
            >>> mt.grad
            MaskedTensor(
              [  3.0000,       --]
            )
        """
        def on_data(grad: Tensor) -> Any:
            result = hook(MaskedTensor._wrap(grad, self._mask))
            return result._masked_data if isinstance(result, MaskedTensor) else result
        return self._masked_data.register_hook(on_data)

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False) -> None:
        """Backpropagates from this MaskedTensor's data (``gradient`` may be a MaskedTensor)."""
        if isinstance(gradient, MaskedTensor):
            gradient = gradient._masked_data
        self._masked_data.backward(gradient, retain_graph=retain_graph, create_graph=create_graph)

    def detach(self) -> MaskedTensor:
        return MaskedTensor._wrap(self._masked_data.detach(), self._mask)

    @property
    def data(self) -> MaskedTensor:
        """The MaskedTensor without its graph, as :meth:`detach`."""
        return self.detach()

    @property
    def grad_fn(self) -> Any:
        """The node that made the data (``None`` for a leaf)."""
        return self._masked_data.grad_fn

    # shape and type
    @property
    def shape(self) -> Any:
        return self._masked_data.shape

    def size(self, dim: int | None = None) -> Any:
        return self._masked_data.size() if dim is None else self._masked_data.size(dim)

    def dim(self) -> int:
        return self._masked_data.ndim

    @property
    def ndim(self) -> int:
        return self._masked_data.ndim

    def numel(self) -> int:
        return self._masked_data.numel()

    def __len__(self) -> int:
        return len(self._masked_data)

    @property
    def dtype(self) -> Any:
        return self._masked_data.dtype

    @property
    def device(self) -> Any:
        return self._masked_data.device

    is_sparse = is_nested = False

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    def to_dense(self) -> MaskedTensor:
        """The MaskedTensor itself, already dense (a copy of data and mask, as in PyTorch)."""
        return MaskedTensor._wrap(self._masked_data.clone(), self._mask.clone())

    def is_contiguous(self) -> bool:
        return self._masked_data.is_contiguous()

    def stride(self, dim: int | None = None) -> Any:
        return self._masked_data.stride(dim)

    def is_same_size(self, other: Any) -> bool:
        return tuple(self.shape) == tuple(other.shape)

    def _one_specified(self, op: str) -> Tensor:
        """The data, after checking that a one-element MaskedTensor's element is specified."""
        if self._mask.numel() == 1 and not bool(self._mask):
            raise ArgumentError(f"MaskedTensor.{op}: the element is masked out, so it has no value."
                                " Hint: mt.get_data() holds the raw data")
        return self._masked_data

    def item(self) -> Any:
        """The one element's value; a masked-out one raises a ValueError, as in PyTorch."""
        return self._one_specified("item").item()

    def __bool__(self) -> bool:
        return bool(self._one_specified("__bool__"))

    def __float__(self) -> float:
        return float(self._one_specified("__float__"))

    def __int__(self) -> int:
        return int(self._one_specified("__int__"))

    def to(self, *args: Any, **kwargs: Any) -> MaskedTensor:
        """The data converted (dtype/device), the mask moved along."""
        data = self._masked_data.to(*args, **kwargs)
        return MaskedTensor._wrap(data, self._mask.to(data.device))

    def cpu(self) -> MaskedTensor:
        return self.to("cpu")

    def type(self, dtype: Any = None) -> Any:
        """The data's type name without ``dtype``, else the MaskedTensor converted to it."""
        if dtype is None:
            return self._masked_data.type()
        data = self._masked_data.type(dtype)
        return MaskedTensor._wrap(data, self._mask)

    def type_as(self, other: Any) -> MaskedTensor:
        """The data converted to ``other``'s dtype (a tensor or MaskedTensor)."""
        if not isinstance(other, (Tensor, MaskedTensor)):
            raise ArgumentTypeError(f"MaskedTensor.type_as: expected a tensor or MaskedTensor, "
                                    f"got {type_name(other)}. Hint: use mt.to(dtype)")
        return self.to(other.dtype)

    def float(self) -> MaskedTensor:
        return self.to(ember.float32)

    def double(self) -> MaskedTensor:
        return self.to(ember.float64)

    def half(self) -> MaskedTensor:
        return self.to(ember.float16)

    def bool(self) -> MaskedTensor:
        return self.to(ember.bool)

    def int(self) -> MaskedTensor:
        return self.to(ember.int32)

    def long(self) -> MaskedTensor:
        return self.to(ember.int64)

    @property
    def mT(self) -> MaskedTensor:  # noqa: N802 - PyTorch's name
        """The last two dims swapped, in data and mask alike."""
        return MaskedTensor._wrap(self._masked_data.mT, self._mask.mT)

    def where(self, condition: Tensor, other: Any) -> MaskedTensor:
        """``self`` where ``condition`` holds, else ``other``; the masks are chosen the same
        way (a plain ``other`` counts as fully specified).

        Example:
            >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0, 3.0]),
            ...                                 ember.tensor([True, False, True]))
            >>> mt.where(ember.tensor([True, True, False]), ember.zeros(3))
            MaskedTensor(
              [  1.0000,       --,   0.0000]
            )
        """
        check_condition(condition)
        other_mask = (other._mask if isinstance(other, MaskedTensor)
                      else ember.ones(ember.as_tensor(other).shape, dtype=ember.bool))
        other_data = other._masked_data if isinstance(other, MaskedTensor) else other
        return MaskedTensor._wrap(ember.where(condition, self._masked_data, other_data),
                                  ember.where(condition, self._mask, other_mask))

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        # an ember.* op taking it for a plain operand: the ops that support MaskedTensors catch
        # this and hand the call to ember.masked.op_table
        raise MaskedOperand()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # Python's protocols and Ember's internals (an AttributeError)
            raise MaskedOperand()
        if name in _DATA_QUERIES:  # (what the data's dtype, device and layout answer)
            return getattr(self._masked_data, name)
        if hasattr(Tensor, name):
            use = name if isinstance(getattr(Tensor, name), property) else f"{name}(...)"
            raise UnsupportedMethod(f"MaskedTensor.{name}: not supported on a MaskedTensor. "
                                    f"Hint: mt.to_tensor(fill).{use} works on a plain tensor "
                                    "with masked-out elements set to fill, or mt.get_data() "
                                    "on the raw data")
        raise AttributeError(f"'MaskedTensor' object has no attribute '{name}'")


# questions about dtype, device, layout and size a MaskedTensor's data answers, as in PyTorch
_DATA_QUERIES = frozenset((
    "layout", "is_cpu", "is_cuda", "is_meta", "is_quantized", "itemsize", "nbytes",
    "get_device", "is_floating_point", "is_complex", "is_signed", "element_size", "is_inference",
    "ndimension", "nelement", "storage_offset", "dim_order", "is_conj", "is_neg"))


def masked_tensor(data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor over a copy of ``data`` (a new leaf; ``data``'s graph is not kept).

    Example:
        >>> ember.masked.masked_tensor(ember.tensor([1, 2, 3]),
        ...                            ember.tensor([True, False, True]))
        MaskedTensor(
          [1,       --, 3]
        )
    """
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor over ``data`` that keeps its graph: gradients flow back into ``data``.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> ember.masked.as_masked_tensor(x * 3, ember.tensor([True, False])).sum().backward()
        >>> x.grad
        tensor([3., 0.])
    """
    _check(data, mask)
    return MaskedTensor._wrap(data.clone(), mask.detach().clone())


def check_condition(condition: Any) -> None:
    """Refuses a MaskedTensor as ``where``'s condition (torch recurses without end on one):
    what its masked-out elements choose is the caller's to say."""
    if isinstance(condition, MaskedTensor):
        raise ArgumentTypeError("where: the condition must be a plain bool tensor, not a "
                                "MaskedTensor. Hint: say what its masked-out elements choose, "
                                "e.g. condition.to_tensor(False)")
