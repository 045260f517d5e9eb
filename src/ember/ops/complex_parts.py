"""Complex tensors and their parts: ``real``/``imag`` (views), ``conj``, ``complex(real, imag)``,
``view_as_real``/``view_as_complex`` (views), and :class:`Holomorphic`, which makes a real
gradient rule hold for complex numbers.

Gradients follow PyTorch's convention: the gradient of a real loss L with respect to
z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative, times 2), so a gradient
step ``z - lr * z.grad`` descends. For a holomorphic f the vjp is ``g * conj(f'(z))``.

Ember's ``conj`` is physical (a copy with the imaginary part negated), where PyTorch's is a lazy
view with a conjugate bit: values and gradients are the same, ``is_conj()`` is always False,
``resolve_conj`` returns its input, and writing into a conj does not write into its input.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend.memory_block import byte_offset
from ember.errors import DTypeError, ShapeError, refuse_non_tensor
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.convert import float32_under_autocast
from ember.ops.forwarding import check_tensors, hands_over
from ember.ops.inplace import bind_inplace
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive, spec
from ember.tensor import Tensor, method

__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj",
           "is_neg", "complex", "view_as_real", "view_as_complex"]


class Holomorphic:
    """A mixin for primitives whose vjp rule, written for real numbers, is the product of the
    output gradient with the derivative (``g * f'(x)``, any linear map of ``g`` with the
    derivative's coefficients). For complex numbers PyTorch's convention wants
    ``g * conj(f'(z)) = conj(conj(g) * f'(z))``: each subclass's vjp is wrapped to run on
    ``conj(g)`` and conjugate its results. The jvp, ``dz * f'(z)``, holds as written. A real
    gradient pays one dtype check."""

    complex_grad = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls.vjp, "conjugates", False):
            cls.vjp = _conjugating(cls.vjp)


def _conjugating(vjp: Callable) -> Callable:
    @wraps(vjp)
    def run(self: Primitive, ctx: Any, *grads: Tensor | None) -> Any:
        g = grads[0]
        if g is None or g._data.dtype.kind != "c":
            return vjp(self, ctx, *grads)
        out = vjp(self, ctx, *(None if g is None else conj(g) for g in grads))
        if isinstance(out, (tuple, list)):
            return tuple(None if r is None else conj(r) for r in out)
        return conj(out)

    run.conjugates = True
    return run


def _complex_spec(a: TensorSpec, op: str) -> TensorSpec:
    if not a.dtype.is_complex:
        raise DTypeError(f"{op}: expects a complex tensor, got {a}")
    return TensorSpec(a.shape, a.dtype.to_real())


class Part(Primitive):
    """``real`` or ``imag`` of a complex tensor: a view of its memory (NumPy's ``.real`` and
    ``.imag`` are views), in the real dtype of its parts."""

    view = True
    save_inputs = False
    complex_grad = True
    part = "real"

    def forward(self, xp, a):
        return getattr(a, self.part)

    def infer(self, a):
        return _complex_spec(a, self.name)

    def vjp(self, ctx, g):
        zeros = g.new_zeros(g.shape)
        return complex(g, zeros) if self.part == "real" else complex(zeros, g)

    def jvp(self, ctx, dz):
        return apply(self, dz)


@primitive
class Real(Part):
    name = "real"
    part = "real"


@primitive
class Imag(Part):
    name = "imag"
    part = "imag"


@primitive
class Conj(Primitive):
    """The complex conjugate, as a new array."""

    name = "conj"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a):
        return xp.conjugate(a)

    def infer(self, a):
        return a

    def vjp(self, ctx, g):
        return conj(g)

    def jvp(self, ctx, dz):
        return conj(dz)


@primitive
class Complex(Primitive):
    """``real + i * imag`` from two real tensors of one floating dtype, with broadcasting."""

    name = "complex"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, re, im):
        out = xp.empty(np.broadcast_shapes(re.shape, im.shape),
                       np.result_type(re.dtype, np.complex64))
        out.real, out.imag = re, im
        return out

    def infer(self, re, im):
        if re.dtype is not im.dtype or re.dtype not in (dtypes.float32, dtypes.float64):
            raise DTypeError(f"complex: expects real and imag of one dtype, float32 or float64, "
                             f"got {re} and {im}. Hint: convert both with .float() or .double()")
        out = broadcast_spec(re, im, op=self.name)
        return TensorSpec(out.shape, re.dtype.to_complex())

    def vjp(self, ctx, g):
        re, im = ctx.inputs
        return sum_to(real(g), re.shape), sum_to(imag(g), im.shape)

    def jvp(self, ctx, dre, dim):
        return complex(dre, dim)


@primitive
class ViewAsReal(Primitive):
    """A complex tensor's memory seen as real pairs: shape ``(*shape, 2)``, the last dim
    holding the real and imaginary parts (any strides: the pairs are adjacent)."""

    name = "view_as_real"
    view = True
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a):
        parts = a.real  # (a view with a's strides, in the real dtype)
        return xp.lib.stride_tricks.as_strided(parts, (*a.shape, 2),
                                               (*a.strides, parts.itemsize))

    def infer(self, a):
        spec = _complex_spec(a, self.name)
        return TensorSpec((*a.shape, 2), spec.dtype)

    def vjp(self, ctx, g):
        return complex(g[..., 0], g[..., 1])

    def jvp(self, ctx, dz):
        return view_as_real(dz)


@primitive
class ViewAsComplex(Primitive):
    """Real pairs (a last dim of size 2 and stride 1) seen as complex numbers: a view."""

    name = "view_as_complex"
    view = True
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a):
        complex_type = np.complex128 if a.dtype == np.float64 else np.complex64
        if a.size == 0 and not any(a.strides):  # (NumPy's empty arrays: no strides to check;
            return xp.empty(a.shape[:-1], complex_type)  # Tensor.stride() reports PyTorch's)
        _check_pair_strides(_elements(a))
        # (in the kernel, so that compiled calls check it too; a meta tensor has no memory)
        if isinstance(a, np.ndarray) and (offset := byte_offset(a) // a.itemsize) % 2:
            raise ShapeError(f"view_as_complex: the tensor must have a storage_offset divisible "
                             f"by 2, as PyTorch's (a complex number starts at an even element), "
                             f"got {offset} (shape {a.shape}). Hint: call .clone() first")
        return a.view(complex_type)[..., 0]

    def infer(self, a):
        if a.dtype not in (dtypes.float32, dtypes.float64):
            raise DTypeError(f"view_as_complex: expects a float32 or float64 tensor, got {a}")
        if not a.shape or a.shape[-1] != 2:
            raise ShapeError(f"view_as_complex: the tensor must have a last dimension of size 2, "
                             f"got shape {a.shape}")
        return TensorSpec(a.shape[:-1], a.dtype.to_complex())

    def vjp(self, ctx, g):
        return view_as_real(g)

    def jvp(self, ctx, dx):
        return complex(dx[..., 0], dx[..., 1])


def _elements(a: Any) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


@hands_over
def real(input: Tensor) -> Tensor:
    """The real part: a view of a complex tensor's memory; a real tensor itself.

    Example:
        >>> ember.real(ember.tensor([1 + 2j, 3 - 1j]))
        tensor([1., 3.])
    """
    return apply(Real, input) if input.dtype.is_complex else input


@hands_over
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, a view of its memory (a real tensor raises, as
    in PyTorch).

    Example:
        >>> ember.imag(ember.tensor([1 + 2j, 3 - 1j]))
        tensor([ 2., -1.])
    """
    if not input.dtype.is_complex:
        raise DTypeError(f"imag: not defined for {input.dtype.name} tensors, only complex ones. "
                         "Hint: a real tensor's imaginary part is zeros_like(x)")
    return apply(Imag, input)


Tensor.real = property(real, lambda self, value: real(self).copy_(value),
                       doc="The real part (a view for complex tensors); assignable.")
Tensor.imag = property(imag, lambda self, value: imag(self).copy_(value),
                       doc="The imaginary part of a complex tensor (a view); assignable.")


@method("conj", "conj_physical")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a real tensor itself). Ember's is a copy, PyTorch's a lazy view.

    Example:
        >>> ember.conj(ember.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    try:
        return apply(Conj, input) if input._data.dtype.kind == "c" else input
    except TensorLikeOperand:  # (a sparse tensor: its own conj; free until it catches)
        return handle(conj, (input,), {})
    except AttributeError:
        refuse_non_tensor("conj", "input", input)
        raise


conj_physical = conj
bind_inplace(conj_physical_=conj)


@method("resolve_conj", "resolve_neg")
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself: Ember's conjugates are always materialised (see :func:`conj`).

    Example:
        >>> ember.resolve_conj(ember.ones(1))
        tensor([1.])
    """
    return input


resolve_neg = resolve_conj


@method("is_conj", "is_neg")
def is_conj(input: Tensor) -> bool:
    """False: Ember has no lazy conjugate bit (see :func:`conj`), nor PyTorch's negative bit
    (``is_neg``; PyTorch sets it on the imaginary part of a lazy conjugate).

    Example:
        >>> ember.tensor([1j]).conj().is_conj()
        False
    """
    return False


is_neg = is_conj


@hands_over
def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """The complex tensor ``real + i * imag`` (float32 parts give complex64, float64 parts
    complex128; broadcasting).

    Example:
        >>> ember.complex(ember.tensor([1.0, 2.0]), ember.tensor([0.5, -1.0]))
        tensor([1.+0.5000j, 2.-1.0000j])
    """
    check_tensors("complex", real=real, imag=imag)
    Complex.infer(spec(real), spec(imag))
    return apply(Complex, real, imag)


@method()
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as real pairs, shape ``(*input.shape, 2)``: a view of its memory.

    Example:
        >>> ember.view_as_real(ember.tensor([1 + 2j]))
        tensor([[1., 2.]])
    """
    ViewAsReal.infer(_spec_of("view_as_real", input))
    return apply(ViewAsReal, input)


@float32_under_autocast
def view_as_complex(input: Tensor) -> Tensor:
    """Real pairs (last dim of size 2, stride 1) as a complex tensor: a view of its memory.

    Example:
        >>> ember.view_as_complex(ember.tensor([[1.0, 2.0], [3.0, -1.0]]))
        tensor([1.+2.j, 3.-1.j])
    """
    ViewAsComplex.infer(_spec_of("view_as_complex", input))
    if input.numel() == 0:  # (the kernel sees NumPy's zero strides of empty arrays)
        _check_pair_strides(input.stride())
    return apply(ViewAsComplex, input)


def _check_pair_strides(strides: tuple[int, ...]) -> None:
    """Refuse element strides that do not pair reals into complex numbers, as PyTorch's."""
    if strides[-1] != 1 or any(s % 2 for s in strides[:-1]):
        raise ShapeError(f"view_as_complex: the last dim must have stride 1 and every other "
                         f"stride must be even (strides {strides}). Hint: call .contiguous() "
                         "first")


def _spec_of(op: str, input: Tensor) -> TensorSpec:
    """The spec of ``op``'s input, a NumPy array or PyTorch tensor refused (its shape and dtype
    would make a spec, judged by Ember's dtype rules)."""
    if not isinstance(input, Tensor):
        refuse_non_tensor(op, "input", input)
    return spec(input)
