"""Linear algebra: matmul (with PyTorch's 1-D, batched and broadcast semantics) and its
special forms mm, bmm, mv, dot, outer; einsum and tensordot; addmm/baddbmm/addmv
(norms are in ``norms.py``).

Primitives: ``matmul`` (its vjp is two matmuls, batch broadcasting reduced by ``sum_to``) and
``einsum`` (its vjp is one einsum per operand). The rest are composites. A GEMM in a dtype the
device has no fast kernel for (bfloat16, float16 on NumPy) runs in the dtype the hardware layer
chooses (:func:`ember.backend.compute_dtype`) and is cast back.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import compute_dtype, gemm
from ember.errors import DTypeError, ShapeError, describe, refuse_non_tensor, type_name
from ember.layouts import jagged, strided
from ember.ops.broadcast import broadcast_shapes, expand, sum_to
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import autocast_mix, cast, promote
from ember.ops.creation import as_tensor, eye, ones
from ember.ops.einsum_autocast import autocast_einsum
from ember.ops.einsum_sublist import sublist_equation
from ember.ops.int_args import as_int
from ember.ops.operator_protocol import refuse_foreign
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, handle
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    not_casting,
    primitive,
    refuse_limited,
)
from ember.ops.reduce import Sum, normalize_dim
from ember.ops.shape import movedim, reshape, transpose
from ember.tensor import Tensor, method

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "einsum",
           "tensordot"]


def _mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name for the matrix transpose
    return transpose(x, -2, -1)


def _reshape(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    return x if x._data.shape == shape else reshape(x, shape)


_GEMM_DTYPE: dict = {}  # (device, backend dtype) -> compute dtype or None: a hot-path cache


def gemm_dtype(x: Tensor) -> Any:
    """The dtype the device computes a GEMM in for ``x``'s dtype, or None if ``x``'s own."""
    key = (x._device, x._data.dtype)
    try:
        return _GEMM_DTYPE[key]
    except KeyError:
        acc = compute_dtype(x.device, x.dtype, "gemm")
        _GEMM_DTYPE[key] = None if acc is x.dtype else acc
        return _GEMM_DTYPE[key]


def _transpose_of(edge: tuple) -> bool:
    """Whether the operand of history ``edge`` (a node's, as recorded) is a transposed matrix
    (``w.t()``): what its history says, as the layout of an operand the rule does not read is
    not kept."""
    node = edge[0]
    return node is not None and node.prim.name == "permute" and node.params["dims"] == (1, 0)


# -- matmul ----------------------------------------------------------------------------------
def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """matmul's output shape, or a ShapeError showing both shapes."""
    shown = f"matmul: {tuple(a)} @ {tuple(b)}"
    if not a or not b:
        raise ShapeError(f"{shown}: both operands need at least 1 dimension; use mul (*) to "
                         "scale by a 0-d tensor")
    k_a, k_b = a[-1], (b[-2] if len(b) > 1 else b[0])
    if k_a != k_b:
        raise ShapeError(f"{shown}: inner sizes {k_a} and {k_b} differ")
    try:
        batch = broadcast_shapes(a[:-2], b[:-2], op="matmul")
    except ShapeError:
        raise ShapeError(f"{shown}: batch dimensions {tuple(a[:-2])} and {tuple(b[:-2])} do "
                         "not broadcast") from None
    return batch + a[-2:-1] + b[-1:] if len(b) > 1 else batch + a[-2:-1]


@primitive
class Matmul(Holomorphic, Primitive):
    name = "matmul"
    limited_dtypes = dtypes.SIGNED_FLOAT8

    # ``compute``: the dtype a GEMM of the operands' runs in (float32 for bfloat16/float16 on
    # NumPy), None for their own; ``wide``: the product is left in ``compute`` unrounded, for
    # a bias to be added before the one rounding (PyTorch's half addmm and linear)
    def forward(self, xp, a, b, *, compute, wide=False):
        if compute is None:
            return gemm.matmul(xp, a, b)
        out = gemm.matmul(xp, a.astype(compute.np), b.astype(compute.np))
        return out if wide else out.astype(a.dtype)

    def infer(self, a, b, *, compute, wide=False):
        if a.dtype is not b.dtype:
            raise DTypeError(f"matmul: operands have dtypes {a.dtype.name} and {b.dtype.name}")
        return TensorSpec(matmul_shape(a.shape, b.shape),
                          compute if wide and compute is not None else a.dtype)

    def flops(self, a, b, *, compute, wide=False):
        out = matmul_shape(a.shape, b.shape)
        k = a.shape[-1]
        n = 1
        for s in out:
            n *= s
        return 2 * n * k  # 2·M·N·K·batch

    def reads(self, ctx, i):
        # a's values only make b's gradient and b's only a's, as PyTorch's mm saves (a frozen
        # layer's input, or a weight under an input that needs no gradient, is not kept)
        return ctx.inputs[1 - i].requires_grad

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        if g.dtype is not a.dtype:  # (a wide product's: the operands' GEMM, as PyTorch's)
            g = cast(g, a.dtype)
        # as matrices: a (…, m, k) and b (…, k, n); a 1-D operand is one row / one column
        a2 = a if a.ndim > 1 else _reshape(a, (1,) + a.shape)
        b2 = b if b.ndim > 1 else _reshape(b, b.shape + (1,))
        lead = g._data.shape[:g.ndim - (a.ndim > 1) - (b.ndim > 1)]
        g2 = _reshape(g, lead + (a2._data.shape[-2], b2._data.shape[-1]))
        ga = gb = None
        if a.requires_grad:
            ga = _reshape(sum_to(matmul(g2, _mT(b2)), a2._data.shape), a._data.shape)
        if b.requires_grad:
            if a2.ndim == 2 and b.ndim == 2 and _transpose_of(ctx.edges[1]):
                # b is a transposed view (a linear layer's weight.T): its gradient made as the
                # weight's, (gᵀa)ᵀ, so the weight's is C-ordered with no transposing copy
                gb = _mT(matmul(_mT(g2), a2))
            else:
                gb = _reshape(sum_to(matmul(_mT(a2), g2), b2._data.shape), b._data.shape)
        return ga, gb

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        out = matmul(da, b) + matmul(a, db)
        compute = ctx.params["compute"]
        return cast(out, compute) if ctx.params.get("wide") and compute is not None else out


@method("matmul", "__matmul__")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product with NumPy/PyTorch semantics: 1-D operands are vectors (a row on the
    left, a column on the right, the added dimension removed after), more than 2 dimensions
    are batches of matrices that broadcast.

    Example:
        >>> (ember.ones(2, 3) @ ember.ones(3)).shape
        ember.Size([2])
    """
    try:
        a_shape, b_shape = input._data.shape, other._data.shape
    except TensorLikeOperand:  # (a sparse right operand below)
        if type(input) in TENSOR_LIKE or (type(other) in TENSOR_LIKE and getattr(
                type(other), "layout", None) in (None, jagged)):  # (masked, nested)
            return handle(matmul, (input, other), {})
        return _not_dense_matmul(input, other)  # a sparse right operand
    except AttributeError:
        return _not_dense_matmul(input, other)
    shapes_match = a_shape and b_shape and a_shape[-1] == (b_shape[-2] if len(b_shape) > 1
                                                           else b_shape[0])
    if not shapes_match or (input._data.dtype != other._data.dtype and not DISPATCH.casting):
        if type(other) in TENSOR_LIKE:  # (a MaskedTensor: its ``_data`` is a tensor)
            return handle(matmul, (input, other), {})
        if not shapes_match:
            matmul_shape(a_shape, b_shape)
        raise DTypeError(f"matmul: {tuple(a_shape)} {input.dtype.name} @ {tuple(b_shape)} "
                         f"{other.dtype.name}: operands must have the same dtype. Hint: "
                         f"convert one, e.g. other.to({input.dtype!r})")
    return apply(Matmul, input, other, compute=gemm_dtype(input))


def _not_dense_matmul(input: Any, other: Any) -> Any:
    """``matmul`` with a sparse operand: a sparse left one's own ``matmul``; a dense vector or
    matrix times a sparse matrix as ``(other.T @ input.T).T`` (as PyTorch, dense); else a
    clear error."""
    refuse_non_tensor("matmul", "input", input)  # (a PyTorch tensor, whose layout is not ours)
    if getattr(input, "layout", strided) is not strided:
        return input.matmul(other)
    if isinstance(input, Tensor) and isinstance(other, np.ndarray):  # (t @ array, as PyTorch)
        return matmul(*promote(input, as_tensor(other)))
    refuse_non_tensor("matmul", "other", other)  # (a PyTorch tensor, a list)
    if isinstance(input, Tensor) and input.ndim in (1, 2) and getattr(other, "ndim", 0) == 2:
        product = other.t().matmul(input.t())
        return product.t() if input.ndim == 2 else product
    kinds = " @ ".join(f"{getattr(x, 'layout', type(x).__name__)!r}" for x in (input, other))
    raise TypeError(f"matmul: expected dense tensors, or a sparse matrix and a dense one, got "
                    f"{kinds} (shapes {tuple(getattr(input, 'shape', ()))} and "
                    f"{tuple(getattr(other, 'shape', ()))}). Hint: "
                    "call .to_dense() on the sparse operand")


@method("__rmatmul__")
def _rmatmul(self: Tensor, other: Any) -> Tensor:
    refuse_foreign("__rmatmul__", other, self)
    if not isinstance(other, Tensor | np.ndarray):  # (a number, a list: TypeError, as torch)
        return NotImplemented
    return matmul(*promote(as_tensor(other), self))  # (array @ t as t @ array: promoted)


def _expect_ndim(op: str, *pairs: tuple[str, Tensor, int]) -> None:
    for what, t, ndim in pairs:
        try:
            wrong = t.ndim != ndim
        except AttributeError:
            refuse_non_tensor(op, what, t)
            raise
        if wrong:
            raise ShapeError(f"{op}: {what} must be {ndim}-D, got shape {tuple(t.shape)}")


@method()
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices (no broadcasting).

    Example:
        >>> ember.mm(ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    mm_operands(input, mat2)
    return matmul(input, mat2)


def mm_operands(input: Tensor, mat2: Tensor) -> None:
    _expect_ndim("mm", ("input", input, 2), ("mat2", mat2, 2))


@method()
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix products of ``(b, n, m)`` and ``(b, m, p)`` tensors (no broadcasting).

    Example:
        >>> ember.bmm(ember.ones(5, 2, 3), ember.ones(5, 3, 4)).shape
        ember.Size([5, 2, 4])
    """
    if type(input) in TENSOR_LIKE:  # (a nested (B, j, n) takes a (1, n, m) too)
        return handle(bmm, (input, mat2), {})
    bmm_operands(input, mat2)
    return matmul(input, mat2)


def bmm_operands(input: Tensor, mat2: Tensor) -> None:
    _expect_ndim("bmm", ("input", input, 3), ("mat2", mat2, 3))
    refuse_limited("bmm", input.dtype)
    if input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: {tuple(input.shape)} @ {tuple(mat2.shape)}: batch sizes "
                         f"{input.shape[0]} and {mat2.shape[0]} differ")


@method()
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector.

    Example:
        >>> ember.mv(ember.ones(2, 3), ember.ones(3))
        tensor([3., 3.])
    """
    _expect_ndim("mv", ("input", input, 2), ("vec", vec, 1))
    refuse_limited("mv", input.dtype)
    return not_casting(matmul, input, vec)  # (autocast leaves mv, dot, vdot alone: PyTorch's)


@method()
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The dot product of two 1-D tensors of the same size.

    Example:
        >>> ember.dot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor(11.)
    """
    _expect_ndim("dot", ("input", input, 1), ("tensor", tensor, 1))
    refuse_limited("dot", input.dtype)
    if input.shape != tensor.shape:
        raise ShapeError(f"dot: the vectors have sizes {input.shape[0]} and {tensor.shape[0]}")
    return not_casting(matmul, input, tensor)


@method()
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product, conjugating ``input`` (the same as :func:`dot` for real tensors).

    Example:
        >>> ember.vdot(ember.tensor([1j]), ember.tensor([1j]))
        tensor(1.+0.j)
    """
    _expect_ndim("vdot", ("input", input, 1), ("other", other, 1))
    return dot(input.conj() if input.is_complex() else input, other)


@method()
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums products over the last dimension of both tensors (a 0-d operand scales).

    Example:
        >>> ember.inner(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    return tensordot(input, other, dims=([-1], [-1]))


@method("outer", "ger")
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two vectors: ``out[i, j] = input[i] * vec2[j]``.

    Example:
        >>> ember.outer(ember.ones(2), ember.ones(3)).shape
        ember.Size([2, 3])
    """
    _expect_ndim("outer", ("input", input, 1), ("vec2", vec2, 1))
    return _reshape(input, (input.shape[0], 1)) * vec2


ger = outer


# -- einsum and tensordot --------------------------------------------------------------------
_LETTERS = string.ascii_letters


def _einsum_terms(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
    """The equation with ellipses spelled out as letters and the output made explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"einsum: {equation!r} has {len(terms)} operand(s) but "
                         f"{len(shapes)} tensor(s) were given")
    bad = sorted(set(eq.replace("...", "")) - set(_LETTERS) - set(",->"))
    if bad or any(t.count("...") > 1 for t in terms + [rhs]):
        raise ShapeError(f"einsum: {equation!r}: subscripts are letters a-z and A-Z, with at "
                         f"most one '...' per operand (found {bad or '...'})")
    free = iter(c for c in _LETTERS if c not in eq)
    spans = []
    for i, (t, shape) in enumerate(zip(terms, shapes, strict=True)):
        named = len(t) - 3 * ("..." in t)
        if len(shape) < named or ("..." not in t and len(shape) != named):
            raise ShapeError(f"einsum: operand {i} has shape {tuple(shape)} ({len(shape)} "
                             f"dims) but its subscripts {t!r} name {named}")
        spans.append(len(shape) - named)
    ellipsis = "".join(next(free) for _ in range(max(spans, default=0)))
    terms = [t.replace("...", ellipsis[len(ellipsis) - n:])
             for t, n in zip(terms, spans, strict=True)]
    if arrow:
        out = rhs.replace("...", ellipsis)
        for c in out:
            if out.count(c) > 1 or c not in lhs + ellipsis:
                raise ShapeError(f"einsum: {equation!r}: output subscript {c!r} is repeated or "
                                 "names no input dimension")
    else:
        joined = "".join(terms)
        out = ellipsis + "".join(sorted(c for c in set(joined) if joined.count(c) == 1
                                        and c not in ellipsis))
    return terms, out


def _letter_sizes(terms: list[str], shapes: Sequence[tuple[int, ...]], equation: str = ""
                  ) -> dict[str, int]:
    """Each subscript's size; size 1 broadcasts against any other size, as in PyTorch. Errors
    name a letter not in the user's ``equation`` as a dimension under '...'."""
    sizes: dict[str, int] = {}
    for i, (t, shape) in enumerate(zip(terms, shapes, strict=True)):
        for c in set(t):
            dims = {n for d, n in zip(t, shape, strict=True) if d == c}
            if len(dims) > 1:
                raise ShapeError(f"einsum: operand {i} (shape {tuple(shape)}) repeats "
                                 f"subscript {c!r} on dimensions of different sizes")
            n, seen = dims.pop(), sizes.get(c, 1)
            if n != seen and seen != 1 and n != 1:
                what = f"subscript {c!r}" if c in equation or not equation else \
                    "a dimension under '...'"
                raise ShapeError(f"einsum: {what} has size {seen} in one operand and {n} in "
                                 f"operand {i} (shape {tuple(shape)}), which do not broadcast")
            sizes[c] = n if seen == 1 else seen
    return sizes


@primitive
class Einsum(Holomorphic, Primitive):
    """einsum over an explicit equation (no ellipsis, output given, sizes already matched)."""

    name = "einsum"

    def forward(self, xp, *arrays, equation, compute):
        if compute is not None:
            dtype = arrays[0].dtype
            arrays = [a.astype(compute.np) for a in arrays]
            return xp.einsum(equation, *arrays, optimize=len(arrays) > 1).astype(dtype)
        out = xp.einsum(equation, *arrays, optimize=len(arrays) > 1)
        # (NumPy gives one operand's transpose or diagonal as a writable view of it: a tensor
        # of its own must not share memory it cannot tell autograd or a graph about)
        return out.copy() if len(arrays) == 1 and xp.may_share_memory(out, arrays[0]) else out

    def infer(self, *specs, equation, compute):
        terms, out = equation.split("->")
        sizes = _letter_sizes(terms.split(","), [s.shape for s in specs])
        return TensorSpec(tuple(sizes[c] for c in out), specs[0].dtype)

    def vjp(self, ctx, g):
        terms, out = ctx.params["equation"].split("->")
        terms = terms.split(",")
        return tuple(_einsum_grad(terms, out, ctx.inputs, i, g, ctx.params["compute"])
                     if t.requires_grad else None for i, t in enumerate(ctx.inputs))

    def jvp(self, ctx, *tangents):
        ops = ctx.inputs
        total = None
        for i, d in enumerate(tangents):
            term = apply(Einsum, *ops[:i], d, *ops[i + 1:], **ctx.params)
            total = term if total is None else total + term
        return total


def _einsum_grad(terms: list[str], out: str, ops: tuple, i: int, g: Tensor,
                 compute: Any) -> Tensor:
    """The gradient of operand ``i``: an einsum of the other operands and ``g``. A subscript
    only this operand has is broadcast back (a ones vector); a repeated one puts the gradient
    on the diagonal (an identity matrix)."""
    target = terms[i]
    names = [t for j, t in enumerate(terms) if j != i] + [out]
    tensors = [t for j, t in enumerate(ops) if j != i] + [g]
    known = set("".join(names))
    fresh = iter(c for c in _LETTERS if c not in "".join(terms) + out)
    result = ""
    for c in target:
        n = ops[i].shape[target.index(c)]
        if c in result:  # a repeated subscript: the gradient lives on the diagonal
            f = next(fresh)
            names.append(c + f)
            tensors.append(eye(n, dtype=g.dtype, device=g.device))
            result += f
            continue
        if c not in known:  # summed in this operand alone: the gradient broadcasts over it
            names.append(c)
            tensors.append(ones(n, dtype=g.dtype, device=g.device))
        result += c
    return apply(Einsum, *tensors, equation=",".join(names) + "->" + result, compute=compute)


def einsum(equation: str | Tensor, *operands: Any, _lower: bool = False) -> Tensor:
    """Sums products of the operands' elements over the subscripts the equation names,
    as ``torch.einsum`` (ellipsis broadcasting, implicit output, size-1 broadcasting). The
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` names subscripts by ints in
    ``[0, 52)`` (and ``...``).

    Example:
        >>> ember.einsum("bij,bjk->bik", ember.ones(2, 3, 4), ember.ones(2, 4, 5)).shape
        ember.Size([2, 3, 5])
    """
    if any(type(x) in TENSOR_LIKE for x in (equation, *operands)):  # (ember.fx, any form)
        return handle(einsum, (equation, *operands), {})
    if isinstance(equation, Tensor):
        equation, operands = sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ShapeError("einsum: at least one operand is needed")
    for i, t in enumerate(operands):
        if type(t) in TENSOR_LIKE:  # (an ember.fx Proxy: the call becomes a graph node)
            return handle(einsum, (equation, *operands), {})
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: operand {i} must be a Tensor, got {type_name(t)}. "
                            "Hint: wrap it with ember.tensor(...)")
    dtype = operands[0].dtype
    for t in operands:
        if t.dtype is not dtype and not DISPATCH.casting:
            raise DTypeError(f"einsum: operands have dtypes {dtype.name} and {t.dtype.name}; "
                             "convert them to one dtype first")
    shapes = [t.shape for t in operands]
    terms, out = _einsum_terms(equation, shapes)
    sizes = _letter_sizes(terms, shapes, equation)
    originals = operands
    if all(t.dtype.category < dtypes.FLOAT for t in operands) and \
            set("".join(terms)) - set(out):  # something is summed
        if len(operands) == 1 or any(c not in out and sizes[c] != 1 and
                                     sum(c in t for t in terms) == 1 for t in terms for c in t):
            # a sum, or an operand summing a subscript alone (PyTorch sums it first; one of
            # size 1 it squeezes): in int64, as ember.sum
            operands = tuple(cast(t, dtypes.int64) for t in operands)
        elif dtype is dtypes.bool_ and any(sizes[c] != 1 for c in "".join(terms)
                                           if c not in out):
            raise DTypeError(f"einsum: {equation!r} sums products of bool tensors, which "
                             "PyTorch does not define. Hint: convert them with .int() first")
    operands = tuple(expand(t, tuple(sizes[c] for c in s)) if len(set(s)) == len(s) else t
                     for t, s in zip(operands, terms, strict=True))
    def product(ops: tuple) -> Tensor:
        return apply(Einsum, *ops, equation=",".join(terms) + "->" + out,
                     compute=gemm_dtype(ops[0]))
    if DISPATCH.casting and not _lower:
        done = autocast_einsum(terms, out, originals, product, operands)
        if done is not None:
            return done
    return product(operands)


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence = 2) -> Tensor:
    """Contracts the last ``dims`` dims of ``a`` with the first ``dims`` of ``b``, or the dims
    listed in ``dims = (dims_a, dims_b)``.

    Example:
        >>> ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5)).shape
        ember.Size([2, 5])
    """
    if a.dtype is not b.dtype:  # (autocast too, as PyTorch's: it checks before its mm)
        raise DTypeError(f"tensordot: both inputs should have the same dtype, got "
                         f"{describe(a.shape, a.dtype)} and {describe(b.shape, b.dtype)}. "
                         "Hint: convert one with .to(other.dtype)")
    if isinstance(dims, Tensor):  # (PyTorch takes the dims as a tensor too)
        dims = dims.tolist()
    if not isinstance(dims, int) and \
            (isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__")):
        dims = as_int(dims, "tensordot", "dims")  # (a NumPy int; else raises, as PyTorch)
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: dims={dims} for shapes {tuple(a.shape)} and "
                             f"{tuple(b.shape)}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [normalize_dim(d, a.ndim, "tensordot") for d in dims_a]
    dims_b = [normalize_dim(d, b.ndim, "tensordot") for d in dims_b]
    if len(dims_a) != len(dims_b):
        raise ShapeError(f"tensordot: {len(dims_a)} dims of a but {len(dims_b)} of b given")
    for name, ds in (("a", dims_a), ("b", dims_b)):
        if len(set(ds)) != len(ds):
            raise ShapeError(f"tensordot: a dim of {name} appears more than once in {ds}")
    for da, db in zip(dims_a, dims_b, strict=True):
        if a.shape[da] != b.shape[db] and 1 in (a.shape[da], b.shape[db]):
            # a size-1 dim broadcasts against its partner, as PyTorch's: sum the partner
            # (in its own dtype: an int32 sum would be int64, which einsum refuses to mix)
            if a.shape[da] == 1:
                b = b.sum(db, keepdim=True, dtype=b.dtype)
            else:
                a = a.sum(da, keepdim=True, dtype=a.dtype)
        elif a.shape[da] != b.shape[db]:
            raise ShapeError(f"tensordot: dim {da} of {tuple(a.shape)} (size {a.shape[da]}) "
                             f"and dim {db} of {tuple(b.shape)} (size {b.shape[db]}) differ")
    sub_a = _LETTERS[:a.ndim]
    rest = iter(_LETTERS[a.ndim:])
    sub_b = "".join(sub_a[dims_a[dims_b.index(j)]] if j in dims_b else next(rest)
                    for j in range(b.ndim))
    out = "".join(c for j, c in enumerate(sub_a) if j not in dims_a) + \
        "".join(c for j, c in enumerate(sub_b) if j not in dims_b)
    return einsum(f"{sub_a},{sub_b}->{out}", a, b, _lower=True)  # (PyTorch's: one mm)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of vectors along ``dim``, broadcasting the rest: ``sum(conj(x) * y)``
    (``x`` conjugated when complex, as PyTorch's); of 0-d tensors, their product.

    Example:
        >>> ember.linalg.vecdot(ember.ones(2, 3), ember.ones(3))
        tensor([3., 3.])
    """
    op = "linalg.vecdot"
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)):  # (a PyTorch tensor, an array)
        refuse_non_tensor(op, "x", x)
        refuse_non_tensor(op, "y", y)
    lowered = autocast_mix(x.dtype, y.dtype)
    if x.dtype is not y.dtype and not lowered:
        raise DTypeError(f"{op}: x and y must have the same dtype, got x "
                         f"{describe(x.shape, x.dtype)} and y {describe(y.shape, y.dtype)}. "
                         f"Hint: convert one, e.g. y.to({x.dtype!r})")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise DTypeError(f"{op}: expected a floating point or complex tensor as input, got "
                         f"{describe(x.shape, x.dtype)}. Hint: convert it with .float()")
    if lowered:  # autocast: PyTorch's CPU lower list, one product
        shape = broadcast_shapes(tuple(x.shape), tuple(y.shape))
        d = normalize_dim(dim, len(shape), op)
        shape = shape or (1,)  # (two 0-d operands: their product as a 1-element dot)
        x, y = (movedim(expand(t, shape), d, -1) for t in (x, y))
        return einsum("...i,...i->...", x, y, _lower=True)  # (even where i has size 1)
    prod = (x.conj() if x.dtype.is_complex else x) * y
    d = normalize_dim(dim, prod.ndim, op)
    return prod if prod.ndim == 0 else apply(Sum, prod, dims=(d,), keepdim=False)
