"""Activation functions: relu, gelu, silu, softplus, elu (with selu and celu), leaky_relu,
hardtanh (with relu6) as primitives, hardsigmoid and hardswish too
(:mod:`ember.ops.hard_activations`), softplus and mish (:mod:`ember.ops.softplus_mish`), glu
and prelu (:mod:`ember.ops.glu_prelu`), softshrink and hardshrink (:mod:`ember.ops.shrink`);
logsigmoid, softsign, tanhshrink, threshold and rrelu as composites.

``ember.sigmoid`` and ``ember.tanh`` live with the other math in :mod:`ember.ops.unary`. The
signatures are ``torch.nn.functional``'s (``inplace=False`` included), and so are the
derivatives at the kinks: relu'(0) = 0, leaky_relu'(0) = negative_slope, and hardtanh' is 0
at its bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes

from ember import dtypes
from ember.errors import (
    ArgumentError,
    DTypeError,
    ShapeError,
    dtype_name,
    is_complex_input,
    is_floating_input,
)
from ember.ops.convert import contiguous
from ember.ops.creation import zeros_like
from ember.ops.dims import normalize_dim
from ember.ops.elu_grad import elu_grad
from ember.ops.fits import check_fits, check_number_int
from ember.ops.forwarding import hands_over, not_a_tensor
from ember.ops.gelu_silu import Gelu, Silu
from ember.ops.glu_prelu import Glu, Prelu
from ember.ops.hard_activations import Hardsigmoid, Hardswish
from ember.ops.inplace import inplace as write_inplace
from ember.ops.inplace import inplace_method
from ember.ops.int_args import as_float, as_number, wide_int_as_float
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    primitive,
    refuse_complex,
)
from ember.ops.random import Generator, rand
from ember.ops.relu_kernel import relu_array, relu_grad_array
from ember.ops.select import select_array, where
from ember.ops.shrink import Hardshrink, Softshrink
from ember.ops.slope_grads import HardtanhGrad, LeakyReluGrad, leaky_relu_array
from ember.ops.softplus_mish import Mish, Softplus
from ember.ops.unary import (
    Unary,
    abs,
    exp,
    in_float32,
    tanh,
)
from ember.tensor import Tensor, method

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "softplus", "mish",
           "logsigmoid", "hardsigmoid", "hardswish", "softsign", "tanhshrink", "threshold",
           "threshold_", "hardshrink", "softshrink", "prelu", "rrelu", "rrelu_", "glu"]

_ONE_PASS = (dtypes.float32, dtypes.float64)  # elu's gradient as elu_grad (half: the composite)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@primitive
class Relu(Unary):
    name = "relu"
    save_inputs, save_outputs = False, True

    def forward(self, xp, a):
        return relu_array(xp, a)

    def chain(self, v, x, y):
        return apply(ReluGrad, v, y)


@primitive
class ReluGrad(Primitive):
    """relu's backward: ``v`` except where relu's output ``y`` is ≤ 0 (a NaN passes ``v``, as
    PyTorch's does); its own op, one pass (:func:`ember.ops.relu_kernel.relu_grad_array`)."""

    name = "relu_grad"

    def reads(self, ctx, i):
        return i == 1  # linear in v: only the mask's source is read

    def forward(self, xp, v, y):
        return relu_grad_array(xp, v, y)

    def infer(self, v, y):
        return TensorSpec(tuple(v.shape), v.dtype)

    def vjp(self, ctx, g):
        y = ctx.inputs[1]  # (a mask: its gradient is zeros, as PyTorch's threshold_backward's)
        return apply(ReluGrad, g, y), zeros_like(y) if y.requires_grad else None

    def jvp(self, ctx, dv, dy):
        return apply(ReluGrad, dv, ctx.inputs[1])


@primitive
class LeakyRelu(Unary):
    name = "leaky_relu"

    @in_float32  # (as PyTorch: -3 * 0.1 in float16 is -0.2998, its -0.3 rounded -0.3000)
    def forward(self, xp, a, *, negative_slope):
        looped = leaky_relu_array(xp, a, negative_slope)
        if looped is not None:
            return looped
        # (the ufunc's own layout, as every unary op's: C for an expanded input; out= keeps
        # a 0-d result an array)
        scaled = xp.multiply(a, negative_slope, out=xp.empty_like(a) if a.ndim == 0 else None)
        if 0 < negative_slope <= 1:
            # x ≥ x·s above 0 and x·s ≥ x below it: the op is their maximum, one pass and no
            # mask (the where below took ~17x as long at 256x256); NaN and -0.0 stay
            return xp.maximum(a, scaled, out=scaled)
        return xp.where(a > 0, a, scaled)

    def chain(self, v, x, y, *, negative_slope):
        if v.dtype in _ONE_PASS:
            return apply(LeakyReluGrad, v, x, negative_slope=negative_slope)
        return where(x > 0, v, v * negative_slope)


@primitive
class Hardtanh(Unary):
    name = "hardtanh"

    def forward(self, xp, a, *, min_val, max_val):
        if a.dtype.kind == "f":  # one pass (1M float32 700 -> 330 µs) and PyTorch's bits:
            # x's -0.0 kept at a zero bound (relu6(-0.0) is -0.0), NaN bounds as its clamp
            return xp.clip(a, min_val, max_val)
        if a.dtype.isbuiltin != 1:  # (bfloat16, float8: an int past int64 as a float)
            min_val, max_val = wide_int_as_float(min_val), wide_int_as_float(max_val)
            return xp.clip(a, min_val, max_val).astype(a.dtype, copy=False)  # (-0.0 kept)
        return xp.minimum(xp.maximum(a, min_val), max_val).astype(a.dtype, copy=False)

    def chain(self, v, x, y, *, min_val, max_val):
        if v.dtype in _ONE_PASS and type(min_val) is type(max_val) is float:
            return apply(HardtanhGrad, v, x, min_val=min_val, max_val=max_val)
        return where((x > min_val) & (x < max_val), v, 0)


class _EluValues(Unary):
    """``scale * x`` above 0, ``scale * alpha * (exp(input_scale * x) - 1)`` below: elu,
    selu and celu are one op with different constants (as in PyTorch)."""

    @in_float32
    def forward(self, xp, a, *, alpha, scale, input_scale):
        # (in one buffer; a select, not np.where's branch per element: 512K float32 ~4.6 ms ->
        # ~1 ms, the same values; a product by 1.0 is skipped: it changes no number)
        # (0 first: at x = -0.0 NumPy's minimum keeps -0.0, so elu(-0.0) is -0.0, as PyTorch's)
        below = xp.minimum(0, a, out=xp.empty_like(a) if a.ndim == 0 else None)
        if input_scale != 1:
            xp.multiply(below, input_scale, out=below)
        xp.expm1(below, out=below)
        xp.multiply(below, alpha * scale, out=below)
        return select_array(xp, a > 0, a if scale == 1 else a * scale, below)


@primitive
class Elu(_EluValues):
    """elu; its backward reads x, as PyTorch's elu: ``exp(x)`` keeps the slope's last bits
    (9.4e-14 at x = -30 in float32), which ``y + alpha`` from the output rounds away."""

    name = "elu"

    def chain(self, v, x, y, *, alpha, scale, input_scale):
        # below 0, dy/dx = input_scale * scale * alpha * exp(input_scale * x); a NaN takes the
        # linear side's slope, as PyTorch (its test is x <= 0)
        if v.dtype in _ONE_PASS:  # (one op)
            return elu_grad(v, x, alpha * scale, input_scale, scale, from_input=True)
        # (exp of x < 0 only: exp(x) overflows above 0 in half precision, and its infinite
        # derivative there would meet where's 0 at second order: NaN; at ±0 the slope's
        # derivative is 0, as PyTorch's elu_double_backward's mask x < 0)
        below = where(x < 0, x, 0)
        slope = exp(below if input_scale == 1 else below * input_scale) * (
            alpha * scale * input_scale)
        return where(x <= 0, v * slope, v if scale == 1 else v * scale)


@primitive
class EluFromOutput(_EluValues):
    """elu in place (``elu_``, ``ELU(inplace=True)``): its backward reads the output, as
    PyTorch's elu_, since the input is overwritten (0 at x = -30 in float32, as PyTorch's)."""

    name = "elu_from_output"
    save_outputs = True

    def reads(self, ctx, i):
        # y <= 0 exactly where x <= 0 unless the slope below 0 is negative (elu with alpha < 0):
        # then the rule reads x too; else the output alone
        p = ctx.params
        return p["alpha"] * p["scale"] * p["input_scale"] < 0

    def chain(self, v, x, y, *, alpha, scale, input_scale):
        # below 0, dy/dx = input_scale * (y + scale*alpha)
        if alpha * scale * input_scale >= 0 and v.dtype in _ONE_PASS:  # (one op)
            return elu_grad(v, y, alpha * scale, input_scale, scale, from_input=False)
        reads_x = alpha * scale * input_scale < 0
        below = (x if reads_x else y) <= 0
        # (y's derivative 0 at ±0, as PyTorch's; where the rule reads x, y may be above 0)
        slope = (y if reads_x else where(y < 0, y, 0)) + alpha * scale
        return where(below, v * (slope if input_scale == 1 else slope * input_scale),
                     v if scale == 1 else v * scale)


def _floating(op: str, input: Tensor) -> None:
    if not is_floating_input(op, "input", input):
        refuse_complex(op, input)
        raise DTypeError(f"{op}: needs a floating tensor, got {input.dtype.name}. Hint: "
                         "convert it with .float() first")


def _run(input: Tensor, inplace: bool, name: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(input)``, or with ``inplace`` written into ``input`` as PyTorch's ``inplace=True``."""
    return write_inplace(input, name + "_", fn) if inplace else fn(input)


# -- the primitives' functions ----------------------------------------------------------------
@method()
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)``; integer tensors stay integer. The gradient at 0 is 0.

    Example:
        >>> ember.relu(ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    try:
        kind = input._data.dtype.kind  # (one dtype read on the hot path)
    except TensorLikeOperand:
        return handle(relu, (input,), {"inplace": inplace})
    except AttributeError as error:
        not_a_tensor("relu", {"input": input}, error)
        raise
    if kind in "bc":
        refuse_complex("relu", input)
        raise DTypeError("relu: bool tensors are not supported. Hint: convert with .int()")
    if inplace:
        return _run(input, inplace, "relu", lambda x: apply(Relu, x))
    return apply(Relu, input)


@hands_over
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, ``negative_slope * input`` elsewhere.

    Example:
        >>> ember.leaky_relu(ember.tensor([-1.0, 2.0]), 0.1)
        tensor([-0.1000,  2.0000])
    """
    _floating("leaky_relu", input)
    return _run(input, inplace, "leaky_relu",
                lambda x: apply(LeakyRelu, x, negative_slope=negative_slope
                                if type(negative_slope) is float else
                                as_float(negative_slope, "leaky_relu", "negative_slope")))


_PLAIN = frozenset((float, int))  # (numbers taken as they are, with no call)


def _number_or_tensor(value: object, op: str, what: str) -> float | Tensor:
    """A bound that may also be a tensor (broadcast, as Ember's clamp takes it)."""
    return value if isinstance(value, Tensor) else as_number(value, op, what)


@hands_over
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; the gradient is 0 at and beyond the bounds.

    Example:
        >>> ember.hardtanh(ember.tensor([-3.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if input.dtype.name == "bool":
        raise DTypeError("hardtanh: bool tensors are not supported")
    if type(min_val) is not float or type(max_val) is not float:  # (an int past 64 bits too)
        min_val = _number_or_tensor(min_val, "hardtanh", "min_val")
        max_val = _number_or_tensor(max_val, "hardtanh", "max_val")
    if not input.dtype.is_floating_point:  # PyTorch casts the bounds to the tensor's dtype
        refuse_complex("hardtanh", input)
        min_val, max_val = int(min_val), int(max_val)
        if min_val < 0 and input.dtype.np.kind == "u":
            raise ArgumentError(f"hardtanh: cannot clamp an unsigned {input.dtype.name} tensor "
                                f"to a negative min_val ({min_val}), as PyTorch. Hint: pass "
                                "min_val >= 0, or convert the input with .int() first")
        check_fits("hardtanh", min_val, input.dtype)  # (300 in uint8: NumPy's OverflowError)
        check_fits("hardtanh", max_val, input.dtype)
    if min_val > max_val:
        raise ArgumentError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return _run(input, inplace, "hardtanh",
                lambda x: apply(Hardtanh, x, min_val=min_val, max_val=max_val))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)``: ``hardtanh(input, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _elu(op: str, input: Tensor, inplace: bool, alpha: float, scale: float,
         input_scale: float) -> Tensor:
    _floating(op, input)
    if not type(alpha) is type(scale) is type(input_scale) is float:
        alpha, scale = as_float(alpha, op, "alpha"), as_float(scale, op, "scale")
        input_scale = as_float(input_scale, op, "input_scale")
    prim = EluFromOutput if inplace else Elu
    return _run(input, inplace, op, lambda x: apply(prim, x, alpha=alpha, scale=scale,
                                                     input_scale=input_scale))


@hands_over
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere.

    Example:
        >>> ember.elu(ember.tensor([-1.0, 2.0]))
        tensor([-0.6321,  2.0000])
    """
    return _elu("elu", input, inplace, alpha, 1.0, 1.0)


@hands_over
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """The self-normalising ``scale * elu(input, alpha)`` with the SELU paper's constants."""
    return _elu("selu", input, inplace, _SELU_ALPHA, _SELU_SCALE, 1.0)


@hands_over
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if type(alpha) is not float:
        alpha = as_float(alpha, "celu", "alpha")
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0")
    return _elu("celu", input, inplace, alpha, 1.0, 1.0 / alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``input * Phi(input)``, Phi the standard normal CDF (exact, with erf); with
    ``approximate="tanh"``, the tanh approximation.

    Example:
        >>> ember.gelu(ember.tensor([-1.0, 1.0]))
        tensor([-0.1587,  0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    try:  # (a tensor-like without a dtype, an ember.fx Proxy, is handed over from here)
        _floating("gelu", input)
        return apply(Gelu, input, approximate=approximate)
    except TensorLikeOperand:
        return handle(gelu, (input,), {"approximate": approximate})


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` (also called swish); complex input too, as in PyTorch.

    Example:
        >>> ember.silu(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.7311])
    """
    try:
        if not is_complex_input("silu", "input", input):
            _floating("silu", input)
        return _run(input, inplace, "silu", lambda x: apply(Silu, x))
    except TensorLikeOperand:
        return handle(silu, (input,), {"inplace": inplace})


@hands_over
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``, and ``input`` itself where
    ``beta * input > threshold`` (for numerical stability).

    Example:
        >>> ember.softplus(ember.tensor([0.0, 30.0]))
        tensor([ 0.6931, 30.0000])
    """
    _floating("softplus", input)
    if not type(beta) is type(threshold) is float:
        beta = as_float(beta, "softplus", "beta")
        threshold = as_float(threshold, "softplus", "threshold")
    return apply(Softplus, input, beta=beta, threshold=threshold)


# -- composites -------------------------------------------------------------------------------
@hands_over
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))``."""
    _floating("mish", input)
    return _run(input, inplace, "mish", lambda x: apply(Mish, x))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed stably as ``-softplus(-input)`` with no threshold
    (softplus's default one drops ``log1p(exp(input))`` below ``input = -20``).

    Example:
        >>> ember.logsigmoid(ember.tensor([0.0]))
        tensor([-0.6931])
    """
    _floating("logsigmoid", input)
    # softplus at beta = -1 is -softplus(-x) in one op (each step's sign flip is exact: the
    # same bits; the backward is v·sigmoid(-x)); C order whatever the input's layout, as
    # PyTorch's log_sigmoid kernel
    return apply(Softplus, contiguous(input), beta=-1.0, threshold=math.inf)


@hands_over
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(input + 3) / 6``, a piecewise-linear sigmoid; the gradient is 0 at -3 and 3.

    Example:
        >>> ember.hardsigmoid(ember.tensor([-4.0, 0.0, 1.5]))
        tensor([0.0000, 0.5000, 0.7500])
    """
    _floating("hardsigmoid", input)  # (as PyTorch: no integer or bool kernel)
    return _run(input, inplace, "hardsigmoid", lambda x: apply(Hardsigmoid, x))


@hands_over
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * hardsigmoid(input)``; the gradient is 0 at -3 and 1 at 3, as PyTorch's.

    Example:
        >>> ember.hardswish(ember.tensor([-4.0, 0.0, 1.5]))
        tensor([-0.0000, 0.0000, 1.1250])
    """
    _floating("hardswish", input)
    return _run(input, inplace, "hardswish", lambda x: apply(Hardswish, x))


def softsign(input: Tensor) -> Tensor:
    """``input / (1 + |input|)``."""
    return input / (abs(input) + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``."""
    return input - tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is above ``threshold``, ``value`` elsewhere.

    Example:
        >>> ember.threshold(ember.tensor([0.5, 2.0]), 1.0, -1.0)
        tensor([-1.,  2.])
    """
    if input.dtype is dtypes.bool_:
        raise DTypeError("threshold: bool tensors are not supported. Hint: convert with .int()")
    if type(threshold) not in _PLAIN or type(value) not in _PLAIN:
        threshold = _number_or_tensor(threshold, "threshold", "threshold")
        value = _number_or_tensor(value, "threshold", "value")
    if not is_floating_input("threshold", "input", input):
        value = int(value)  # integer tensors stay integer (the value truncated), as PyTorch's
    # (tested as ``x <= threshold``, as PyTorch does, so that a NaN passes through)
    return _run(input, inplace, "threshold", lambda x: where(x <= threshold, value, x))


@hands_over
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, 0 elsewhere (NaN stays NaN)."""
    _floating("hardshrink", input)
    check_number_int("hardshrink", lambd)
    return apply(Hardshrink, input, lambd=lambd)


@hands_over
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` moved ``lambd`` toward 0, and 0 within ``[-lambd, lambd]`` (NaN stays NaN).

    Example:
        >>> ember.softshrink(ember.tensor([-2.0, 0.2, 1.0]))
        tensor([-1.5000,  0.0000,  0.5000])
    """
    _floating("softshrink", input)
    check_number_int("softshrink", lambd)
    high = float(ml_dtypes.finfo(input.dtype.np).max)
    if not 0 <= lambd <= high:  # (NaN and infinity too, as PyTorch)
        raise ArgumentError(f"softshrink: lambd must be in [0, {high:g}] for a "
                            f"{input.dtype.name} input, got {lambd}")
    return apply(Softshrink, input, lambd=lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``input`` where positive, ``weight * input`` elsewhere, with one learnt slope per
    channel (dimension 1) or a single one.

    Example:
        >>> ember.prelu(ember.tensor([[-1.0, 2.0]]), ember.tensor([0.25, 0.5]))
        tensor([[-0.2500,  2.0000]])
    """
    if not is_floating_input("prelu", "input", input):
        raise DTypeError(f"prelu: needs a floating input, got {input.dtype.name}")
    if input.dtype is not weight.dtype and not DISPATCH.casting:  # (autocast casts both)
        names = [dtype_name("prelu", n, t) for n, t in (("input", input), ("weight", weight))]
        raise DTypeError(f"prelu: input ({names[0]}) and weight ({names[1]}) must have one "
                         "dtype, as torch's (no promotion). Hint: weight.to(input.dtype)")
    if weight.numel() == 1:
        weight = weight.reshape(())  # (a 0-d input stays 0-d)
    else:
        channels = input.shape[1] if input.ndim >= 2 else 0
        if weight.ndim != 1 or weight.shape[0] != channels:
            raise ShapeError(f"prelu: weight of shape {tuple(weight.shape)} for input of shape "
                             f"{tuple(input.shape)}; it needs one slope per channel "
                             f"(dimension 1, size {channels}) or a single one")
        weight = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return apply(Prelu, input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False, *,
          generator: Generator | None = None) -> Tensor:
    """Randomized leaky relu: ``input`` where positive, ``a * input`` elsewhere (0 included),
    with ``a`` drawn uniformly from ``[lower, upper]`` per element in training and
    ``(lower + upper) / 2`` in evaluation. The gradient is the slope used.

    Example:
        >>> ember.rrelu(ember.tensor([-3.0, 2.0]), 0.25, 0.75)
        tensor([-1.5000,  2.0000])
    """
    _floating("rrelu", input)
    if type(lower) is not float or type(upper) is not float:
        lower, upper = as_number(lower, "rrelu", "lower"), as_number(upper, "rrelu", "upper")
    if lower > upper:
        raise ArgumentError(f"rrelu: lower bound ({lower}) must not exceed the upper bound "
                            f"({upper})")
    if training:
        # (a 16-bit draw: slopes on its coarse grid, rounded twice, biased low; torch's are
        # drawn as doubles and rounded once)
        wide = input.dtype if input.dtype.itemsize >= 4 else dtypes.float64
        noise = rand(input.shape, generator=generator, dtype=wide, device=input.device)
        slope = noise * (upper - lower) + lower
        slope = slope if slope.dtype is input.dtype else slope.to(input.dtype)
        return _run(input, inplace, "rrelu", lambda x: where(x.detach() <= 0, x * slope, x))
    # (evaluation is leaky_relu's test: a NaN takes the slope, as PyTorch's; training's is
    # x <= 0, a NaN keeps gradient 1)
    slope = (lower + upper) / 2
    if input.dtype in _ONE_PASS:  # (leaky_relu's values; its gradient's zeros keep their sign)
        return _run(input, inplace, "rrelu",
                    lambda x: apply(LeakyRelu, x, negative_slope=float(slope)))
    return _run(input, inplace, "rrelu", lambda x: where(x.detach() > 0, x, x * slope))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the halves of ``input``
    along ``dim``.

    Example:
        >>> ember.glu(ember.tensor([[1.0, 2.0, 0.0, 0.0]]))
        tensor([[0.5000, 1.0000]])
    """
    size = input.shape[normalize_dim(dim, input.ndim, "glu")] if input.ndim else 0
    if size % 2 or not input.ndim:
        raise ShapeError(f"glu: dimension {dim} of input {tuple(input.shape)} has size {size}; "
                         "glu halves it, so it must be even")
    _floating("glu", input)  # (as PyTorch: no integer kernel; sigmoid's promotion hid that;
    # after the shape, which an fx Proxy fails first with the hint to wrap glu)
    return apply(Glu, input, dim=normalize_dim(dim, input.ndim, "glu"))


def _inplace_function(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def op(input: Tensor, *args: object, **kwargs: object) -> Tensor:
        return fn(input, *args, inplace=True, **kwargs)
    op.__name__ = op.__qualname__ = fn.__name__ + "_"
    op.__doc__ = f"In-place form of ``{fn.__name__}``: writes the result into ``input``."
    return op


relu_ = _inplace_function(relu)
leaky_relu_ = _inplace_function(leaky_relu)
hardtanh_ = _inplace_function(hardtanh)
elu_ = _inplace_function(elu)
selu_ = _inplace_function(selu)
celu_ = _inplace_function(celu)
threshold_ = _inplace_function(threshold)
rrelu_ = _inplace_function(rrelu)
inplace_method("relu_", relu)
