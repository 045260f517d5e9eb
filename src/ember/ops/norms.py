"""Norms: ``vector_norm``, ``matrix_norm`` (``'nuc'``, 2 and -2 through the singular values),
``ember.linalg.norm`` and ``Tensor.norm``, as composites whose gradient at the origin is 0
(PyTorch's convention), not NaN."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.autograd.graph import name_node
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, describe
from ember.ops.arithmetic import pow  # noqa: A004 - PyTorch's name
from ember.ops.compare import eq
from ember.ops.complex_parts import view_as_real
from ember.ops.convert import cast, reduces_in_float32
from ember.ops.creation import full_like, ones_like, zeros_like
from ember.ops.forwarding import check_tensors, hands_over
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_float, dims_tuple
from ember.ops.linalg_decomp import svdvals
from ember.ops.linalg_solve import check_float
from ember.ops.primitive import DISPATCH, apply, not_casting
from ember.ops.reduce import (
    Sum,
    amax,
    amin,
    extreme_sharing_nans,
    normalize_dim,
    reduce_dims,
    reduced_shape,
)
from ember.ops.select import where, zero_grad_from
from ember.ops.shape import reshape
from ember.ops.unary import abs, sqrt  # noqa: A004
from ember.tensor import Tensor, method

__all__ = ["norm", "renorm", "frobenius_norm", "nuclear_norm", "norm_except_dim"]

_INF = float("inf")
_MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, _INF, -_INF)


def _norm_input(x: Tensor, dtype: Any, op: str) -> Tensor:
    """``x`` cast to ``dtype``, which must hold its values without narrowing, as PyTorch's."""
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype.name}. Hint: call "
                         ".float() on it")
    if dtype is not None:
        dtype = dtypes.to_dtype(dtype)
        if dtype.is_complex:  # a norm is real: PyTorch refuses this too
            raise DTypeError(f"{op}: the input is {x.dtype.name}, so dtype must be a real "
                             f"dtype, got dtype={dtype.name}. Hint: leave dtype out, or pass "
                             f"a real one such as dtype=ember.{x.dtype.name}")
        if dtypes.promote_types(x.dtype, dtype) is not dtype:
            raise DTypeError(f"{op}: the input's dtype {x.dtype.name} does not convert to "
                             f"dtype={dtype.name} without narrowing. Hint: pass a dtype at "
                             f"least as wide as {x.dtype.name}, or cast the input first")
        x = cast(x, dtype)
    return x


def _complex_norm_input(x: Tensor, dtype: Any, op: str) -> Tensor:
    if dtype is None:
        return x
    dtype = dtypes.to_dtype(dtype)
    if not dtype.is_complex or dtypes.promote_types(x.dtype, dtype) is not dtype:
        raise DTypeError(f"{op}: the input is {x.dtype.name}, so dtype must be a "
                         f"complex dtype at least as wide, got dtype={dtype.name}")
    return cast(x, dtype)


def _root(s: Tensor, p: float) -> Tensor:
    """``s ** (1/p)`` whose gradient at ``s == 0`` is 0, not nan: a norm's gradient at the
    origin, as PyTorch defines it. Without autograd or a transform, the plain root."""
    if DISPATCH.handler is None and not s.requires_grad:
        return sqrt(s) if p == 2 else pow(s, 1.0 / p)
    zero = eq(s, 0)
    safe = where(zero, ones_like(s), s)
    return where(zero, zeros_like(s), sqrt(safe) if p == 2 else pow(safe, 1.0 / p))


def _vector_norm(x: Tensor, p: float, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    if reduces_in_float32(x):  # 300² overflows float16, the norm of (300, 400) does not
        return cast(_vector_norm(cast(x, dtypes.float32), p, dims, keepdim), x.dtype)
    if p == 2:
        return _root(apply(Sum, x * x, dims=dims, keepdim=keepdim), 2)
    a = abs(x)
    if p == _INF or p == -_INF:
        return extreme_sharing_nans(a, dims, keepdim, p > 0)
    if p == 0:  # a count: as in PyTorch, in the graph with a zero gradient
        count = apply(Sum, cast(cast(x.detach(), dtypes.bool_), x.dtype), dims=dims,
                      keepdim=keepdim)
        return zero_grad_from(apply(Sum, x, dims=dims, keepdim=keepdim) if x.requires_grad
                              else x, count)
    if p == 1:
        return apply(Sum, a, dims=dims, keepdim=keepdim)
    # |x|^p (0 or inf at 0) with a zero, not nan, gradient at 0 for p < 1, as PyTorch's
    zero = eq(a, 0)
    at_zero = zeros_like(a) if p > 0 else full_like(a, _INF)
    a = where(zero, at_zero, pow(where(zero, ones_like(a), a), p))
    return _root(apply(Sum, a, dims=dims, keepdim=keepdim), p)


def _pairs_norm(z: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """The 2-norm of complex ``z`` over ``dims`` as that of its (real, imag) pairs: smooth, as
    PyTorch's gradient ``z / norm`` (through ``|z|·|z|`` a zero element had no second
    derivative: 0 where PyTorch's is finite)."""
    r = _vector_norm(view_as_real(z), 2, (*dims, z.ndim), keepdim)
    return r.squeeze(-1) if keepdim else r


_NODE_NAME = "LinalgVectorNormBackward0"  # (PyTorch's grad_fn of the vector norms)


def vector_norm(x: Tensor | None = None, ord: float = 2, dim: int | Sequence[int] | None = None,
                keepdim: bool = False, *, dtype: Any = None,
                input: Tensor | None = None) -> Tensor:  # noqa: A002 - PyTorch's name
    """The vector ``ord``-norm over ``dim`` (all elements when None): ``sum(|x|^ord)^(1/ord)``,
    the largest/smallest ``|x|`` for ``ord = ±inf``, the count of non-zeros for 0; of a
    complex tensor, the norm of the moduli (real). ``x`` may come as ``input=``, as PyTorch's.

    Example:
        >>> ember.linalg.vector_norm(ember.tensor([3.0, 4.0]))
        tensor(5.)
        >>> ember.linalg.vector_norm(ember.tensor([3j, 4.0]))
        tensor(5.)
    """
    op = "linalg.vector_norm"
    if x is None or input is not None:
        x = _the_input(op, x, input)
    if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
        return not_casting(lambda: vector_norm(x, ord, dim, keepdim, dtype=dtype))
    if isinstance(ord, str):
        raise TypeError(f"{op}: ord must be a number, got {ord!r}. Hint: 'fro' and 'nuc' are "
                        "matrix norms: use linalg.matrix_norm or linalg.norm")
    if type(ord) is not int and type(ord) is not float:
        ord = as_float(ord, op, "ord")  # noqa: A001 - PyTorch's name
    if x.dtype.is_complex:  # the norm of the moduli, a real tensor, as PyTorch's
        z = _complex_norm_input(x, dtype, op)
        if ord == 2:
            return name_node(_pairs_norm(z, reduce_dims(z, dim, op), keepdim), _NODE_NAME)
        x, dtype = abs(z), None
    x = _norm_input(x, dtype, op)
    dims = reduce_dims(x, dim, op)
    if (ord < 0 or ord == _INF) and any(x.shape[d] == 0 for d in dims):
        raise ShapeError(f"{op}: cannot compute the {ord} norm over an empty dimension of "
                         f"{describe(x.shape, x.dtype)} (dims {dims}): the operation has no "
                         "identity. Hint: reduce over non-empty dims")
    return name_node(_vector_norm(x, float(ord), dims, keepdim), _NODE_NAME)


def _the_input(op: str, x: Tensor | None, input: Tensor | None) -> Tensor:  # noqa: A002
    """The tensor given as ``x`` or as PyTorch's other name for it, ``input=`` (one of them)."""
    if (x is None) == (input is None):
        raise ArgumentTypeError(f"{op}: give the tensor once, as x or input=, got "
                                f"{'both' if input is not None else 'neither'}")
    return x if input is None else input


def _matrix_dims(A: Tensor, dim: Any, op: str) -> tuple[int, int]:  # noqa: N803
    dims = dims_tuple(dim, op)
    if len(dims) != 2:
        raise ShapeError(f"{op}: dim must be a 2-tuple of dims, got dim={dim} for "
                         f"{describe(A.shape, A.dtype)}")
    if A.ndim < 2:
        raise ShapeError(f"{op}: the input tensor A must have at least 2 dims, got "
                         f"{describe(A.shape, A.dtype)}. Hint: use linalg.vector_norm for "
                         "vectors")
    rows, cols = (normalize_dim(d, A.ndim, op) for d in dims)
    if rows == cols:
        raise ShapeError(f"{op}: dim {dim} names the same dimension twice")
    return rows, cols


def matrix_norm(input: Tensor, ord: float | str = "fro", dim: tuple[int, int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The matrix norm of ``A`` over the two dims ``dim`` (other dims are a batch): ``'fro'``,
    ``'nuc'`` (sum of singular values), ``2``/``-2`` (largest/smallest singular value),
    ``1``/``-1`` (max/min column abs-sum), ``inf``/``-inf`` (rows).

    Example:
        >>> ember.linalg.matrix_norm(ember.tensor([[1.0, -2.0], [3.0, 4.0]]), 1)
        tensor(6.)
        >>> ember.linalg.matrix_norm(ember.tensor([[3.0, 0.0], [0.0, -4.0]]), "nuc")
        tensor(7.)
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.matrix_norm"
    if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
        return not_casting(lambda: matrix_norm(A, ord, dim, keepdim, dtype=dtype))
    if ord not in _MATRIX_ORDS or isinstance(ord, bool):
        raise ArgumentError(f"{op}: ord {ord!r} is not supported; use 'fro', 'nuc', 2, -2, 1, -1, "
                            "inf or -inf")
    if A.dtype.is_complex:  # norms of complex matrices are real, as PyTorch's
        A = _complex_norm_input(A, dtype, op)  # noqa: N806
    else:
        A = _norm_input(A, dtype, op)  # noqa: N806
    rows, cols = _matrix_dims(A, dim, op)
    both = tuple(sorted((rows, cols)))
    if ord == "fro":
        return name_node(_pairs_norm(A, both, keepdim) if A.dtype.is_complex else
                         _vector_norm(A, 2, both, keepdim), _NODE_NAME)
    if ord in ("nuc", 2, -2):
        check_float(op, A, complex_ok=True)  # (under svdvals' name otherwise)
        s = svdvals(A.movedim((rows, cols), (-2, -1)))
        out = s.sum(dim=-1) if ord == "nuc" else _extreme(s, s.ndim - 1, ord, A, op)
        for d in both if keepdim else ():
            out = out.unsqueeze(d)
        return out
    summed, extreme = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = apply(Sum, abs(A), dims=(summed,), keepdim=True)
    out = _extreme(sums, extreme, ord, A, op, keepdim=True)
    return out if keepdim else reshape(out, reduced_shape(A.shape, both, False))


def _extreme(x: Tensor, dim: int, ord: float, A: Tensor, op: str,  # noqa: N803
             keepdim: bool = False) -> Tensor:
    """The largest (``ord > 0``) or smallest of ``x`` along ``dim``: over no values, the
    largest is 0 (a norm's least value, as PyTorch's) and the smallest an error."""
    if x.shape[dim]:
        return (amax if ord > 0 else amin)(x, (dim,), keepdim)
    if ord < 0:
        raise ShapeError(f"{op}: the ord={ord} norm of {describe(A.shape, A.dtype)} is a "
                         "minimum over no values (an empty matrix). Hint: use a positive ord")
    return apply(Sum, x, dims=(dim,), keepdim=keepdim)  # zeros, still in the graph


def linalg_norm(input: Tensor, ord: float | str | None = None,
                dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """``ember.linalg.norm``: a vector norm over one dim (or over everything when ``ord`` and
    ``dim`` are None), a matrix norm over two.

    Example:
        >>> ember.linalg.norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5.)
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.norm"
    dims = None if dim is None else dims_tuple(dim, op)
    if dims is not None and len(dims) not in (1, 2):
        raise ShapeError(f"{op}: dim must name 1 or 2 dims, got {dim}")
    if dims is None and ord is not None and A.ndim not in (1, 2):
        raise ShapeError(f"{op}: with ord={ord!r} and dim=None the input must be 1-D or 2-D, "
                         f"got shape {tuple(A.shape)}; pass dim")
    if isinstance(ord, str):  # 'fro' and 'nuc' are matrix norms, also of a vector (an error)
        return matrix_norm(A, ord, (-2, -1) if dims is None else dims, keepdim, dtype=dtype)
    if dims is None and (ord is None or A.ndim == 1):
        return vector_norm(A, 2 if ord is None else ord, None, keepdim, dtype=dtype)
    if dims is not None and len(dims) == 1:
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dims is None else dims,
                       keepdim, dtype=dtype)


@method()
def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None,
         keepdim: bool = False, dtype: Any = None) -> Tensor:
    """``torch.norm``: a number ``p`` (or None) is the vector ``p``-norm over ``dim`` (all
    elements when None), also when ``dim`` names two dims; ``'fro'`` is the vector 2-norm over
    at most two dims; ``'nuc'`` is the matrix norm over the two dims ``dim`` (the only two of a
    matrix when None). The gradient at the origin is 0, not nan.

    Example:
        >>> ember.tensor([3.0, 4.0]).norm()
        tensor(5.)
        >>> ember.tensor([[3.0, 0.0], [0.0, -4.0]]).norm("nuc")
        tensor(7.)
    """
    if not isinstance(p, str):
        return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)
    if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim, keepdim,
                       dtype=dtype)


def frobenius_norm(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """The 2-norm over at most two dims ``dim`` (PyTorch's older name for
    ``linalg.vector_norm(input, 2, dim, keepdim)``).

    Example:
        >>> ember.frobenius_norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]), (0, 1))
        tensor(5.)
    """
    dims = dims_tuple(dim, "frobenius_norm")
    if len(dims) > 2:
        raise ShapeError(f"frobenius_norm: expected at most 2 dimensions, but got {len(dims)} "
                         f"dimensions instead (dim={dim})")
    return vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input: Tensor, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    """The sum of singular values over the two dims ``dim`` (PyTorch's older name for
    ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``); ``nuclear_norm(input, keepdim)``
    also reads as in PyTorch.

    Example:
        >>> ember.nuclear_norm(ember.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor(7.)
    """
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim): PyTorch's first overload
        dim, keepdim = (-2, -1), dim
    return matrix_norm(input, "nuc", dim, keepdim)


@method()
@hands_over
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled
    down to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch does).

    Example:
        >>> ember.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    op = "renorm"
    check_tensors(op, input=input)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise DTypeError(f"{op}: expected a floating or complex input, got "
                         f"{input.dtype.name}. Hint: call .float() on it")
    if input.ndim < 2:
        raise ShapeError(f"{op}: input needs at least 2 dimensions, got {input.ndim} "
                         f"dimension(s) (shape {tuple(input.shape)})")
    d = normalize_dim(dim, input.ndim, op)
    p, maxnorm = as_float(p, op, "p"), as_float(maxnorm, op, "maxnorm")
    if not p > 0:
        raise ArgumentError(f"{op}: non-positive norm not supported, got p = {p}")
    if not maxnorm >= 0:
        raise ArgumentError(f"{op}: expected maxnorm to be >= 0 but got {maxnorm}")
    dims = tuple(i for i in range(input.ndim) if i != d)
    size = abs(input) if input.dtype.is_complex else input  # a complex slice: its moduli's norm
    norm = _vector_norm(size, p, dims, True)
    scaled = norm.detach() > maxnorm
    if input.requires_grad:  # a slice left as it is sends no gradient into its norm: with a
        # NaN in it the chain rule gives 0 * NaN there (PyTorch: 1 for each of its elements)
        norm = _vector_norm(where(scaled, size, 0.0), p, dims, True)
    factor = where(scaled, maxnorm / (norm + 1e-7), 1.0)
    # (such a slice is its input, selected: no tangent or gradient of it meets a NaN factor)
    return where(scaled, input * cast(factor, input.dtype), input)


bind_inplace(renorm_=renorm)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept to broadcast against
    ``v`` (weight normalisation's ``g``); ``dim=-1``: one norm of the whole tensor, as in
    PyTorch.

    Example:
        >>> ember.norm_except_dim(ember.tensor([[3.0, 0.0], [4.0, 1.0]]), 2, 1)
        tensor([[5., 1.]])
    """
    return norm_except_dim_of("norm_except_dim", v, pow, dim)


def norm_except_dim_of(op: str, v: Tensor, pow: float, dim: int) -> Tensor:  # noqa: A002
    """``norm_except_dim`` whose errors name ``op`` (weight_norm's, which calls it)."""
    if dim == -1:
        return vector_norm(v, pow)
    if not -v.ndim <= dim < max(v.ndim, 1):
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of shape "
                         f"{tuple(v.shape)} (expected -1 or one in [{-v.ndim}, {v.ndim - 1}])")
    dim = dim % v.ndim if v.ndim else 0  # other negative dimensions count from the end
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, dims, keepdim=True) if dims else abs(v)
