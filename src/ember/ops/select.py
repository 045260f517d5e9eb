"""Elementwise selection: where, clamp/clip, maximum/minimum and fmax/fmin.

Gradients at ties follow PyTorch: ``maximum``/``minimum`` split the gradient equally between
equal inputs, ``fmax``/``fmin`` give it to ``input``, and ``clamp`` passes it to ``input``
wherever ``min <= input <= max``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import compiled, parallel
from ember.errors import DTypeError, OpError, refuse_non_tensor
from ember.layouts import in_operands_layout
from ember.ops.arithmetic import Binary
from ember.ops.broadcast import broadcast_shapes, sum_to
from ember.ops.compare import eq, ge, gt, isnan, le, lt
from ember.ops.convert import cast, promote, result_dtype
from ember.ops.creation import zeros, zeros_like
from ember.ops.fits import check_fits, check_number_int, converts_unchecked
from ember.ops.inplace import bind_inplace
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, calling_op, handle
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, complex_error, primitive
from ember.tensor import Tensor, method

try:  # the clip ufunc that np.clip wraps
    from numpy._core.umath import clip as _clip
except ImportError:  # NumPy 1.26
    from numpy.core.umath import clip as _clip

__all__ = ["where", "clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "fmax",
           "fmin"]


# -- where --------------------------------------------------------------------------------------
@primitive
class Where(Primitive):
    name = "where"
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves, copies or sums elements: real coefficients

    def forward(self, xp, condition, a, b):
        if xp is np and a.dtype == b.dtype and (
                condition.size >= _BITS_LEAST or a.size >= _BITS_LEAST
                or b.size >= _BITS_LEAST):  # (small: np.where, no call to find that out)
            out = _select_loop(condition, a, b)
            if out is None and a.dtype.itemsize == 4:
                out = _select_bits(condition, a, b)
            if out is not None:
                return out
        out = xp.where(condition, a, b)
        # (a broadcast condition leaves a and b to decide, where NumPy's C order wins ties)
        if condition.flags.c_contiguous and condition.shape == out.shape:
            return out
        return in_operands_layout(xp, out, condition, a, b)

    def reads(self, ctx, i):
        return i == 0  # only the condition's values; a and b give shapes

    def infer(self, condition, a, b):
        if condition.dtype is not dtypes.bool_:
            raise DTypeError(f"where: the condition must be a bool tensor, got "
                             f"{condition.dtype.name}. Hint: compare it, e.g. where(c != 0, …)")
        shape = broadcast_shapes(condition.shape, a.shape, b.shape, op="where")
        return TensorSpec(shape, a.dtype)

    def vjp(self, ctx, g):
        condition, a, b = ctx.inputs
        return (None,
                sum_to(where(condition, g, 0), a.shape) if a.requires_grad else None,
                sum_to(where(condition, 0, g), b.shape) if b.requires_grad else None)

    def jvp(self, ctx, dc, da, db):
        return where(ctx.inputs[0], da, db)


_BITS_LEAST = 1 << 14  # elements: below, np.where's one loop is as fast
_KERNELS = compiled.register("ember.ops.select_numba")
_SHARE = 1 << 21  # elements a piece of the loop takes at least


def _select_loop(condition: Any, a: Any, b: Any) -> Any:
    """``np.where(condition, a, b)`` of float32/float64 ``a`` and ``b`` (one dtype) as numba's
    one pass (:mod:`ember.ops.select_numba`), or None where it does not apply: numba off, a
    condition not C-contiguous of the result's shape, or ``a``/``b`` neither that nor one
    element."""
    if a.dtype not in (np.float32, np.float64) or not condition.flags.c_contiguous or \
            not compiled.numba_enabled():
        return None
    shape, blocks, numbers = condition.shape, [condition.reshape(-1)], []
    for x in (a, b):
        if x.shape == shape and x.flags.c_contiguous:
            blocks.append(x.reshape(-1))
        elif x.size == 1 and x.ndim <= len(shape) and \
                np.broadcast_shapes(x.shape, shape) == shape:
            numbers.append(x.reshape(-1)[0])
        else:
            return None
    kernels = compiled.load(_KERNELS)
    if kernels is None or len(numbers) == 2:
        return None
    kernel = kernels.select if not numbers else kernels.select_number_second \
        if a.shape == shape and a.flags.c_contiguous else kernels.select_number_first
    out = np.empty(shape, a.dtype)
    parallel.over_rows(kernel, (*blocks, out.reshape(-1)), _SHARE, *numbers)
    return out


def select_array(xp: Any, condition: Any, a: Any, b: Any) -> Any:
    """``xp.where(condition, a, b)`` of backend arrays, by numba's one pass where it applies
    (the same values, without np.where's branch per element).

    Example:
        >>> select_array(np, np.array([True, False]), np.ones(2), np.zeros(2))
        array([1., 0.])
    """
    if xp is np and condition.size >= _BITS_LEAST and a.dtype == b.dtype:
        out = _select_loop(condition, a, b)
        if out is not None:
            return out
    return xp.where(condition, a, b)


def _select_bits(condition: Any, a: Any, b: Any) -> Any:
    """``np.where(condition, a, b)`` of 4-byte elements as ``b ^ ((a ^ b) & mask)`` on their
    bits, or None where it does not apply (each operand must be C-contiguous of the result's
    shape or one element, 0-d or broadcast, and one of them full). The same bits, without
    np.where's branch per element, which a random condition mispredicts: 256x256 float32
    ~180-500 → ~30 µs. (Called for arrays of :data:`_BITS_LEAST` elements or more.)"""
    shape = np.broadcast_shapes(condition.shape, a.shape, b.shape)
    operands, full = [], False
    for x in (condition, a, b):
        if x.shape == shape and x.flags.c_contiguous:
            full = True
        elif x.size == 1 or not any(x.strides):  # one element (a sum's gradient, a number)
            x = x[(0,) * x.ndim + (...,)]  # (a 0-d view)
        else:
            return None
        operands.append(x)
    if not full:
        return None
    condition, a, b = operands
    mask = condition.view(np.uint8).astype(np.uint32)
    np.negative(mask, out=mask)  # 1 → all ones
    a_bits, b_bits = a.view(np.uint32), b.view(np.uint32)
    out = np.bitwise_xor(a_bits, b_bits)
    out = np.bitwise_and(out, mask, out=out if out.shape == shape else None)
    np.bitwise_xor(out, b_bits, out=out)
    return out.view(a.dtype)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """Elementwise ``input if condition else other``, broadcasting all three.

    ``input`` and ``other`` may be Python scalars; the result has their common dtype (a
    number that an integer result dtype cannot hold is an error, not wrapped around).
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``.

    Example:
        >>> x = ember.tensor([-1.0, 2.0])
        >>> ember.where(x > 0, x, 0.0)
        tensor([0., 2.])
    """
    try:
        if input is None and other is None:
            from ember.ops.indexing import nonzero

            return nonzero(condition, as_tuple=True)
        if condition.dtype is not dtypes.bool_:
            raise DTypeError(f"where: the condition must be a bool tensor, got "
                             f"{condition.dtype.name}. Hint: compare it, e.g. where(c != 0, …)")
        a, b = promote(input, other)
        for value in (input, other):  # (PyTorch checks no float16/8: 70000 is inf there)
            if not isinstance(value, Tensor) and not converts_unchecked(a.dtype):
                check_fits("where", value, a.dtype)
        return apply(Where, condition, a, b)
    except TensorLikeOperand:  # an operand is an fx Proxy, a DTensor, …
        return handle(where, (condition, input, other), {})
    except AttributeError:  # (a PyTorch tensor's dtype has no Ember name)
        for name, value in (("input", input), ("other", other), ("condition", condition)):
            if not isinstance(value, (Tensor, int, float, complex, np.generic)):
                refuse_non_tensor(calling_op(), name, value)
        raise


def zero_grad_from(source: Tensor, value: Tensor) -> Tensor:
    """``value``, recorded as depending on ``source`` with a zero gradient, as PyTorch records
    an op whose result ignores an input that needs a gradient (``fill_``, a count, ``A**0``);
    ``value`` itself when ``source`` needs none."""
    if not source.requires_grad:
        return value
    return where(zeros((), dtype=dtypes.bool_, device=value.device), source, value)


@primitive
class NoGradFrom(Primitive):
    """A copy of input 0 recorded as an output of the other inputs' graphs whose vjp gives
    no gradient (None) to any: see :func:`no_grad_from`."""

    name = "no_grad_from"
    save_inputs = False  # (reads none)
    allocates = True
    complex_grad = True  # (no gradient at all)
    jvp_takes_none = True
    limited_dtypes = dtypes.ALL_LIMITED

    def forward(self, xp, value, *sources):
        return value.copy()

    def infer(self, value, *sources):
        return TensorSpec(tuple(value.shape), value.dtype)

    def vjp(self, ctx, g):
        return (None,) * len(ctx.inputs)

    def jvp(self, ctx, *tangents):
        return zeros_like(ctx.output(0))  # (PyTorch's: a zero tangent, not none)


def no_grad_from(value: Tensor, *sources: Tensor) -> Tensor:
    """``value`` (which needs no gradient), recorded as an output of the ``sources``' graph
    that passes no gradient back, as PyTorch's outputs that no input reaches (``lstsq``'s
    empty residuals, ``householder_product`` with no reflectors): a backward from it alone
    leaves each source's ``.grad`` None, and ``autograd.grad`` asks for ``allow_unused``;
    ``value`` itself when no source needs a gradient and no transform (forward-mode AD, vmap,
    jit) is active, which would give it a zero tangent or record it."""
    if not (any(s.requires_grad for s in sources) or DISPATCH.transforming()):
        return value
    return apply(NoGradFrom, value.detach(), *sources)


@method("where")
def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``x.where(condition, y)`` is ``where(condition, x, y)``."""
    return where(condition, self, other)


# -- maximum / minimum --------------------------------------------------------------------------
class Extremum(Binary):
    """Elementwise max or min of two same-dtype tensors; subclasses say which and how ties and
    NaNs share the gradient."""

    ufunc = ""
    greater = True  # maximum-like: input wins where input > other

    def forward(self, xp, a, b):
        if a.dtype.kind == "c":  # (complex numbers have no order; b has a's dtype)
            raise complex_error(self.name, a.dtype)
        r = getattr(xp, self.ufunc)(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def input_wins(self, a: Tensor, b: Tensor) -> Tensor:
        return gt(a, b) if self.greater else lt(a, b)

    def input_loses(self, a: Tensor, b: Tensor) -> Tensor:
        return lt(a, b) if self.greater else gt(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        share = where(eq(a, b), g * 0.5, g)
        return (sum_to(where(self.input_loses(a, b), 0, share), a.shape)
                if a.requires_grad else None,
                sum_to(where(self.input_wins(a, b), 0, share), b.shape)
                if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return where(eq(a, b), (da + db) * 0.5, where(self.input_wins(a, b), da, db))


@primitive
class Maximum(Extremum):
    name = "maximum"
    ufunc = "maximum"


@primitive
class Minimum(Extremum):
    name = "minimum"
    ufunc = "minimum"
    greater = False


class NanIgnoring(Extremum):
    """``fmax``/``fmin``: a NaN loses to a number; ties give the whole gradient to input."""

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        keep = self.keeps_input(a, b)
        return (sum_to(where(keep, g, 0), a.shape) if a.requires_grad else None,
                sum_to(where(keep, 0, g), b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return where(self.keeps_input(a, b), da, db)

    def keeps_input(self, a: Tensor, b: Tensor) -> Tensor:
        return (ge(a, b) if self.greater else le(a, b)) | isnan(b)


@primitive
class FMax(NanIgnoring):
    name = "fmax"
    ufunc = "fmax"


@primitive
class FMin(NanIgnoring):
    name = "fmin"
    ufunc = "fmin"
    greater = False


@method()
def maximum(input: Tensor, other: Any) -> Tensor:
    """Elementwise maximum; NaN if either is NaN. Equal inputs share the gradient equally.

    Example:
        >>> ember.maximum(ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0]))
        tensor([3., 5.])
    """
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:  # (a nested tensor or a MaskedTensor)
        return handle(maximum, (input, other), {})
    return apply(Maximum, a, b)


@method()
def minimum(input: Tensor, other: Any) -> Tensor:
    """Elementwise minimum; NaN if either is NaN. Equal inputs share the gradient equally."""
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:  # (a nested tensor or a MaskedTensor)
        return handle(minimum, (input, other), {})
    return apply(Minimum, a, b)


@method()
def fmax(input: Tensor, other: Any) -> Tensor:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    Example:
        >>> ember.fmax(ember.tensor([float("nan"), 1.0]), ember.tensor([2.0, 0.0]))
        tensor([2., 1.])
    """
    return apply(FMax, *promote(input, other))


@method()
def fmin(input: Tensor, other: Any) -> Tensor:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return apply(FMin, *promote(input, other))


# -- clamp --------------------------------------------------------------------------------------
@primitive
class Clamp(Primitive):
    """``input`` clamped to Python-number bounds (either may be None)."""

    name = "clamp"
    backward_name = "ClampBackward1"  # PyTorch's Scalar-bounds overload

    def forward(self, xp, a, *, min, max):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        # the bounds in a's dtype first: NumPy would widen bfloat16 with a Python float, and
        # refuses an integer out of the dtype's range, which PyTorch wraps (uint8 -3 is 253)
        dt = dtypes.from_numpy(a.dtype)
        low = None if min is None else dtypes.cast_ready(xp, xp.asarray(min), dt).astype(a.dtype)
        high = None if max is None else dtypes.cast_ready(xp, xp.asarray(max), dt).astype(
            a.dtype)
        if xp is np:
            return _clip_numpy(a, low, high)
        out = a if low is None else xp.maximum(a, low)
        return out if high is None else xp.minimum(out, high)

    def infer(self, a, **params):
        return a

    def vjp(self, ctx, g):
        return where(self.inside(ctx), g, 0)

    def jvp(self, ctx, da):
        return where(self.inside(ctx), da, 0)

    def inside(self, ctx: Any) -> Tensor:
        """Where ``min <= x <= max``: where the gradient passes."""
        x, low, high = ctx.inputs[0], ctx.params["min"], ctx.params["max"]
        if low is None:
            return le(x, high)
        if high is None:
            return ge(x, low)
        return ge(x, low) & le(x, high)


def _clip_numpy(a: Any, low: Any, high: Any) -> Any:
    """``a`` clamped by NumPy's clip ufunc (``low``/``high``: 0-d arrays of ``a``'s dtype, or
    None): one pass, ~5x faster than ``maximum`` then ``minimum`` at 256x256, and signed zeros
    come out as PyTorch's (``maximum(-0.0, 0.0)`` gives -0.0, PyTorch's clamp 0.0). np.clip's
    wrapper costs ~2 µs a call; the ufunc has no loop for ml_dtypes' bfloat16 and float8s
    (it would widen them), which compute in float32, exactly."""
    if a.dtype.isbuiltin != 1:
        wide = [None if b is None else b.astype(np.float32) for b in (low, high)]
        return _clip_numpy(a.astype(np.float32), *wide).astype(a.dtype)
    if low is None or high is None:
        if a.dtype.kind != "f":  # (no signed zeros to mind)
            return np.maximum(a, low) if high is None else np.minimum(a, high)
        low, high = (-np.inf if low is None else low), (np.inf if high is None else high)
    return _clip(a, low, high)


def _number(x: Any) -> Any:
    """A clamp bound, a NumPy scalar read as a Python number (np.uint64 past int64 refused
    first, as PyTorch refuses it, rather than read as a huge int)."""
    if not isinstance(x, np.generic):
        return x
    check_number_int("clamp", x)
    return x.item()


@method("clamp", "clip")
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """``input`` limited to ``[min, max]`` elementwise; ``min``/``max`` are numbers, tensors
    (broadcast) or None. Where ``min > max`` the result is ``max``, as in PyTorch.

    Example:
        >>> ember.clamp(ember.tensor([-2.0, 0.5, 3.0]), min=0.0, max=1.0)
        tensor([0.0000, 0.5000, 1.0000])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(clamp, (input, min, max), {})
    if min is None and max is None:
        raise OpError("clamp: at least one of min and max must be given")
    low, high = _number(min), _number(max)
    if isinstance(low, Tensor) or isinstance(high, Tensor):
        return _clamp_tensors(input, low, high)
    if not (input.dtype.is_floating_point and type(low) in _BOUNDS and type(high) in _BOUNDS):
        if type(low) in TENSOR_LIKE or type(high) in TENSOR_LIKE:  # (a nested bound)
            return handle(clamp, (input, min, max), {})
        input = cast(input, result_dtype(*(v for v in (input, low, high) if v is not None)))
    if input.dtype not in dtypes.ALL_LIMITED:  # (those: apply's own refusal or rule)
        for bound in (low, high):  # -1000 for int8 raises, as in PyTorch, rather than wraps
            check_number_int("clamp", bound)
            check_fits("clamp", bound, input.dtype)
    return apply(Clamp, input, min=low, max=high)


_BOUNDS = (int, float, type(None))  # bounds that never change a floating tensor's dtype


@primitive
class ClampTensor(Primitive):
    """``input`` clamped to tensor bounds of its dtype (broadcast): the inputs are ``(input,
    min, max)``, ``(input, min)`` or ``(input, max)`` as ``bounds`` says. A NaN anywhere gives
    NaN; ``min > max`` gives ``max``. The gradient goes to ``input`` where ``min <= input <=
    max``, to ``min`` where ``input < min < max``, to ``max`` where ``input > max`` or ``max
    < min``, and nowhere else (a NaN, or ``input < min == max``), as PyTorch's; so is the
    forward-mode rule, which differs at those points (a tie picks the bound's tangent)."""

    name = "clamp_tensor"
    backward_name = "ClampBackward0"  # PyTorch's Tensor-bounds overload

    def forward(self, xp, a, *bounds, bounds_given):
        if a.dtype.kind == "c":
            raise complex_error("clamp", a.dtype)
        low, high = self.bounds(bounds, bounds_given)
        # (the result in ``input``'s layout where it has the result's shape, as PyTorch's
        # first operand decides: NumPy's would be C order where a bound's layout differs)
        shape = np.broadcast_shapes(a.shape, *(b.shape for b in bounds))
        out = xp.empty_like(a) if a.shape == shape else None
        if low is not None:
            out = xp.maximum(a, low, out=out)
        if high is not None:  # (into ``out`` only when it has the result's shape)
            out = xp.minimum(a if low is None else out, high,
                             out=None if out is None or out.shape != shape else out)
        if a.flags.c_contiguous and a.shape == shape:
            return out
        return in_operands_layout(xp, out, a, *bounds)

    def infer(self, a, *bounds, bounds_given):
        shape = broadcast_shapes(a.shape, *(b.shape for b in bounds), op="clamp")
        return TensorSpec(shape, a.dtype)

    def vjp(self, ctx, g):
        return tuple(sum_to(where(mask, g, 0), t.shape) if t.requires_grad else None
                     for t, mask in zip(ctx.inputs, self.masks(ctx)))

    def jvp(self, ctx, dx, *dbounds):  # (PyTorch's rule, which differs at ties and NaN)
        x, *bounds = ctx.inputs
        given = ctx.params["bounds_given"]
        if given != "both":
            inside = gt(x, bounds[0]) if given == "min" else lt(x, bounds[0])
            return where(inside, dx, dbounds[0])
        (low, high), (dlow, dhigh) = bounds, dbounds
        return where(gt(low, high), dhigh, where(lt(x, low), dlow, where(gt(x, high), dhigh, dx)))

    @staticmethod
    def bounds(bounds: Any, given: str) -> tuple[Any, Any]:
        """(min, max), None for the one not given."""
        if given == "both":
            return bounds[0], bounds[1]
        return (bounds[0], None) if given == "min" else (None, bounds[0])

    def masks(self, ctx: Any) -> tuple[Tensor, ...]:
        """Where the gradient goes, one mask per input: to input, then to each bound given."""
        x, *bounds = ctx.inputs
        low, high = self.bounds(bounds, ctx.params["bounds_given"])
        if high is None:
            return ge(x, low), lt(x, low)
        if low is None:
            return le(x, high), gt(x, high)
        return (ge(x, low) & le(x, high), lt(x, low) & lt(low, high),
                gt(x, high) | lt(high, low))


def _clamp_tensors(input: Tensor, low: Any, high: Any) -> Tensor:
    """Clamp with a tensor bound: the bounds (numbers or tensors) as tensors of the common
    dtype."""
    given = [v for v in (low, high) if v is not None]
    x, *bounds = promote(input, *given)
    which = "both" if len(given) == 2 else "min" if low is not None else "max"
    return apply(ClampTensor, x, *bounds, bounds_given=which)


@method()
def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


@method()
def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)


clip = clamp

bind_inplace(clamp_=clamp, clip_=clamp, clamp_min_=clamp_min, clamp_max_=clamp_max)
