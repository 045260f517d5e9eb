"""Transposes: ``t``, ``adjoint``, ``swapaxes`` and the ``T``, ``H``, ``mT`` and ``mH`` properties,
views made with :mod:`ember.ops.shape`'s ``Permute`` and ``transpose`` (complex ones conjugated,
as Ember's conj is physical); on a 0-d tensor, PyTorch's deprecated identity with its warning."""

from __future__ import annotations

import warnings

from ember.errors import ShapeError
from ember.ops.complex_parts import conj
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import apply
from ember.ops.shape import Permute, transpose
from ember.tensor import Tensor, method

__all__ = ["t", "adjoint", "swapaxes"]


@method()
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """:func:`ember.transpose` under NumPy's argument names, as ``torch.swapaxes``.

    Example:
        >>> ember.zeros(2, 3, 4).swapaxes(axis0=0, axis1=2).shape
        ember.Size([4, 3, 2])
    """
    return transpose(input, axis0, axis1)


@method()
def t(input: Tensor) -> Tensor:
    """The transpose of a matrix (0-d and 1-d tensors come back as they are, as a view).

    Example:
        >>> ember.zeros(2, 3).t().shape
        ember.Size([3, 2])
    """
    if input.ndim > 2:
        raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got shape "
                         f"{tuple(input.shape)}. Hint: use .mT or transpose(-2, -1)")
    try:
        return _reverse(input)
    except TensorLikeOperand:
        return handle(t, (input,), {})


@method("adjoint")
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (a view for real tensors; complex ones
    are conjugated into a copy, as Ember's conj is physical).

    Example:
        >>> ember.adjoint(ember.tensor([[1j, 2.0]]))
        tensor([[0.-1.j],
                [2.-0.j]])
    """
    return conj(_matrix_transpose(input, "adjoint"))


def _matrix_transpose(x: Tensor, op: str) -> Tensor:
    if x.ndim == 0:
        return _deprecated_on_0d(x, op)
    if x.ndim < 2:
        raise ShapeError(f"{op}: only supported on matrices or batches of matrices; got a "
                         f"{x.ndim}-d tensor")
    return transpose(x, -2, -1)


def _deprecated_on_0d(x: Tensor, op: str, stacklevel: int = 4) -> Tensor:
    """PyTorch's deprecated identity: T, H, mT, mH and adjoint of a 0-d tensor."""
    warnings.warn(f"{op} is deprecated on 0-D tensors, where it transposes nothing (as in "
                  "PyTorch). Hint: use x itself, or x.conj()", UserWarning, stacklevel=stacklevel)
    return x


def _reverse(x: Tensor) -> Tensor:
    """All of ``x``'s dimensions reversed (a view)."""
    return apply(Permute, x, dims=tuple(range(x.ndim))[::-1])


def reversed_for_t(x: Tensor, stacklevel: int = 2) -> Tensor:
    """``x.T``: ``x``'s dimensions reversed; deprecated (a warning, as PyTorch's, at the frame
    ``stacklevel`` up: a wrapper's ``.T`` passes its caller's) but on a matrix."""
    if x.ndim == 0:
        return _deprecated_on_0d(x, "T", stacklevel + 1)
    if x.ndim != 2:
        warnings.warn(f"The use of `x.T` on tensors of dimension other than 2 ({x.ndim} here) to "
                      "reverse their shape is deprecated, as in PyTorch, where it will throw an "
                      "error in a future release. Hint: x.mT transposes batches of matrices, "
                      "x.permute(*range(x.ndim - 1, -1, -1)) reverses the dimensions",
                      UserWarning, stacklevel=stacklevel)
    return _reverse(x)


method("T")(property(reversed_for_t, doc="All dimensions reversed (the transpose of a matrix)."))
def _adjoint_of_matrix(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return conj(_deprecated_on_0d(x, "H", 3))
    if x.ndim != 2:
        raise ShapeError(f"H: only supported on matrices (2-D tensors), got a {x.ndim}-d "
                         "tensor. Hint: x.mH for batches of matrices, x.conj() for vectors")
    return conj(_reverse(x))


method("H")(property(_adjoint_of_matrix,
                     doc="The conjugate transpose of a matrix (a view for real tensors)."))
method("mT")(property(lambda x: _matrix_transpose(x, "mT"),
                      doc="The last two dimensions swapped (batched transpose)."))
method("mH")(property(lambda x: conj(_matrix_transpose(x, "mH")),
                      doc="The last two dimensions swapped and conjugated (a view for real "
                          "tensors)."))
