"""The nested tensor of layout ``ember.jagged``: a batch of B tensors whose sizes differ along
one dimension, stored as one packed ``values`` tensor plus integer ``offsets``, as PyTorch's
jagged nested tensors (NJT) are.

Sequence b is ``values[offsets[b]:offsets[b + 1]]`` along the packed dimension. Its ops act on
``values`` with ordinary Ember ops, so autograd, gradient checks and higher derivatives need
nothing new. A :class:`NestedTensor` is its own class, not an :class:`ember.Tensor`: ordinary
tensors' ops never look at it (the functional ops that take it hand it over, see
:mod:`ember.ops.overrides`); its ops live in :mod:`ember.nested.functional`.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentTypeError, IndexOutOfRange, ShapeError
from ember.layouts import jagged, layout
from ember.nested.ragged import Ragged, ragged_for
from ember.ops.overrides import TensorLikeOperand, outermost_op
from ember.tensor import Tensor

__all__ = ["NestedTensor", "UnsupportedOpError"]

HINT = ("Hint: make a dense tensor with nt.to_padded_tensor(0.0), or work on the sequences of "
        "nt.unbind()")


class UnsupportedOpError(TensorLikeOperand, NotImplementedError, AttributeError):
    """An op nested tensors do not support. Also an AttributeError, since asking a nested
    tensor for a tensor's method or internals raises it (``hasattr`` then answers False), and
    the :class:`~ember.ops.overrides.TensorLikeOperand` that makes the ops that support nested
    tensors hand them over. Without ``op``, the message names the outermost ``ember.ops``
    function the error passed through (found only when the message is read)."""

    def __init__(self, op: str | None = None) -> None:
        super().__init__(op)
        self.op = op

    def __str__(self) -> str:
        op = self.op or outermost_op(self.__traceback__)
        return f"{op}: not supported for nested tensors (layout ember.jagged). {HINT}"


def unsupported(op: str) -> UnsupportedOpError:
    """The error of an op that nested tensors do not support."""
    return UnsupportedOpError(op)


class NestedTensor:
    """B tensors of shape (length_b, *inner) as one (B, j, *inner) tensor; ``j`` is the ragged
    dimension (its size :class:`~ember.nested.ragged.RaggedDim` prints as ``j1``).

    Make one with :func:`ember.nested.nested_tensor`, :func:`~ember.nested.as_nested_tensor`
    or :func:`~ember.nested.nested_tensor_from_jagged`.

    Example:
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)])
        >>> nt.dim(), nt.values().shape, nt.offsets()
        (3, ember.Size([3, 3]), tensor([0, 2, 3]))
        >>> (nt * 2).sum(1)
        tensor([[4., 4., 4.],
                [2., 2., 2.]])
    """

    __slots__ = ("_values", "_ragged", "_ragged_idx", "__weakref__")
    is_nested = True
    layout: layout = jagged

    def __init__(self, values: Tensor, ragged: Ragged, ragged_idx: int = 1) -> None:
        self._values, self._ragged, self._ragged_idx = values, ragged, ragged_idx

    def _with(self, values: Tensor, ragged_idx: int | None = None) -> NestedTensor:
        """A nested tensor of the same ragged structure with new ``values``."""
        return NestedTensor(values, self._ragged,
                            self._ragged_idx if ragged_idx is None else ragged_idx)

    # what PyTorch's jagged nested tensors answer
    def values(self) -> Tensor:
        """The packed values: the sequences concatenated along the ragged dimension."""
        return self._values

    def offsets(self) -> Tensor:
        """The B + 1 boundaries of the sequences in :meth:`values` (int64, or the integer
        tensor given to ``nested_tensor_from_jagged``)."""
        return self._ragged.offsets

    def lengths(self) -> None:
        """None, as PyTorch answers for a nested tensor without holes (every one Ember
        makes); the lengths are ``offsets().diff()``."""
        return None

    @property
    def shape(self) -> tuple:
        vshape = tuple(self._values.shape)
        r = self._ragged_idx
        return (self._ragged.batch, *vshape[:r - 1], self._ragged.dim, *vshape[r:])

    def size(self, dim: int | None = None) -> Any:
        """The shape, or its entry ``dim``: the ragged one is its ``j`` (no number), as in
        PyTorch."""
        shape = self.shape
        if dim is None:
            return shape
        if not -len(shape) <= dim < len(shape):
            raise IndexOutOfRange(f"size: dimension {dim} is out of range for a nested tensor of "
                                  f"shape {shape}")
        return shape[dim]

    def dim(self) -> int:
        return self._values.ndim + 1

    @property
    def ndim(self) -> int:
        return self._values.ndim + 1

    def numel(self) -> int:
        return self._values.numel()

    nelement = numel

    def element_size(self) -> int:
        """The bytes of one element."""
        return self._values.element_size()

    ndimension = dim

    def __len__(self) -> int:
        return self._ragged.batch

    @property
    def dtype(self) -> Any:
        return self._values.dtype

    @property
    def device(self) -> Any:
        return self._values.device

    @property
    def is_cpu(self) -> bool:
        """Whether the values are on the CPU."""
        return self.device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        """Whether the values are on a GPU."""
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating one."""
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is a complex one."""
        return self.dtype.is_complex

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the values are (False after a transpose of the ragged dim, as in PyTorch)."""
        return self._values.is_contiguous()

    def contiguous(self, memory_format: Any = None) -> NestedTensor:
        return self if self.is_contiguous() else self._with(self._values.contiguous())

    # autograd: all of it is the values'
    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:  # (checked as a tensor's: a leaf, a bool)
        self._values.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> NestedTensor:
        self._values.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._values.is_leaf

    @property
    def grad_fn(self) -> Any:
        """The autograd node that made the values (None for a leaf)."""
        return self._values.grad_fn

    @property
    def grad(self) -> NestedTensor | None:
        """The gradient of a leaf nested tensor, nested like it (None before backward)."""
        grad = self._values.grad
        return None if grad is None else self._with(grad)

    @grad.setter
    def grad(self, grad: NestedTensor | None) -> None:
        """``nt.grad = None`` drops the gradient; a nested tensor of this structure sets it."""
        self._values.grad = None if grad is None else check_same_structure("grad", self, grad)

    def backward(self, gradient: NestedTensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Backpropagates ``gradient`` (a nested tensor of this structure) into the graph (into
        the ``.grad`` of ``inputs`` only, where given)."""
        from ember.nested.autograd import nested_backward  # (it builds on this module)

        nested_backward(self, gradient, retain_graph, create_graph, inputs)

    def retain_grad(self) -> None:
        """Keeps the gradient of this non-leaf in ``.grad`` after backward."""
        self._values.retain_grad()

    def detach(self) -> NestedTensor:
        return self._with(self._values.detach())

    def clone(self, *, memory_format: Any = None) -> NestedTensor:
        return self._with(self._values.clone())

    def to(self, *args: Any, **kwargs: Any) -> NestedTensor:
        """The nested tensor with its values converted as ``Tensor.to`` converts them (on
        another device, with its offsets there too: a new ragged structure)."""
        args = tuple(a._values if isinstance(a, NestedTensor) else a for a in args)
        values = self._values.to(*args, **kwargs)
        if values.device is self._values.device:
            return self._with(values)
        ragged = self._ragged
        moved = ragged_for(ragged.offsets.to(values.device), ragged.min_seqlen,
                           ragged.max_seqlen)
        return NestedTensor(values, moved, self._ragged_idx)

    def cpu(self) -> NestedTensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> NestedTensor:
        return self.to(device if device is not None else "cuda", non_blocking=non_blocking)

    def __bool__(self) -> bool:
        raise RuntimeError("the truth value of a nested tensor is ambiguous (it holds many "
                           "values). Hint: reduce it first, e.g. bool((nt > 0).values().all())")

    __hash__ = object.__hash__  # by identity, as a tensor's (``==`` is elementwise)

    def __repr__(self) -> str:
        size = "(" + ", ".join(map(str, self.shape)) + ")"
        node = self._values._node
        grad = f", grad_fn=<{node.name()}>" if node is not None else \
            ", requires_grad=True" if self.requires_grad else ""
        return (f"NestedTensor(size={size}, offsets={self.offsets()!r}{grad}, "
                f"contiguous={self.is_contiguous()})")

    def __getattr__(self, name: str) -> Any:
        # a Tensor method the class lacks, or a core op reading a tensor's internals (``_data``)
        if hasattr(Tensor, name) and not name.startswith("__"):
            raise UnsupportedOpError(None if name.startswith("_") else name)
        raise AttributeError(f"'NestedTensor' object has no attribute {name!r}")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        # NumPy conversion, as a core op does with an operand it takes for a number
        raise UnsupportedOpError()


def _of_values(name: str) -> Any:
    """The method ``name`` answered by the values (``is_signed``, ``new_tensor``, …)."""
    def method(self: NestedTensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._values, name)(*args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``Tensor.{name}`` of the values (a dense answer, as in PyTorch)."
    return method


for _name in ("is_signed", "is_conj", "is_neg", "is_inference", "get_device", "new_tensor"):
    setattr(NestedTensor, _name, _of_values(_name))


def _property_of_values(name: str) -> property:
    """The attribute ``name`` answered by the values (``nbytes``, ``is_meta``, …)."""
    return property(lambda self: getattr(self._values, name),
                    doc=f"``Tensor.{name}`` of the values, as in PyTorch.")


for _name in ("itemsize", "nbytes", "is_meta", "is_quantized", "is_sparse", "is_mps",
              "retains_grad"):
    setattr(NestedTensor, _name, _property_of_values(_name))
NestedTensor.data = property(NestedTensor.detach, doc="The nested tensor without its graph.")
NestedTensor.real = property(lambda self: self._with(self._values.real),
                             doc="The real parts (a nested view of the values').")
NestedTensor.imag = property(lambda self: self._with(self._values.imag),
                             doc="The imaginary parts (a nested view of the values').")


def check_same_structure(op: str, a: NestedTensor, b: Any) -> Tensor:
    """``b``'s values, when ``b`` is a nested tensor of ``a``'s ragged structure and layout;
    else PyTorch's error for nested tensors of different ragged sizes."""
    if not isinstance(b, NestedTensor):
        raise ArgumentTypeError(f"{op}: expected a nested tensor, got {type(b).__name__}")
    if b._ragged.dim is not a._ragged.dim or b._ragged_idx != a._ragged_idx:
        raise ShapeError(f"{op}: nested tensors of shapes {a.shape} and {b.shape} have different "
                         "ragged structures (each ragged size j<n> belongs to one offsets "
                         "tensor). Hint: build both on one offsets tensor, e.g. ember.nested."
                         "nested_tensor_from_jagged(values, nt.offsets())")
    return b._values

