"""``nn.init``: fill a tensor in place from a distribution, as PyTorch's ``torch.nn.init`` does.

Every function writes under ``no_grad`` (so it works on parameters), returns the tensor, and
takes an optional ``generator=`` (an :class:`ember.Generator`) for a reproducible stream of
its own. The distributions are PyTorch's; the random streams are Ember's own, so the same
seed gives different numbers than in PyTorch.

Example:
    >>> w = ember.empty(3, 5)
    >>> _ = nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    >>> nn.init.zeros_(ember.empty(3))
    tensor([0., 0., 0.])
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ember.autograd.grad_mode import no_grad, refuse_inference_write
from ember.errors import ArgumentError, DivisionByZero, DTypeError
from ember.nn.parameter import is_lazy, refuse_lazy
from ember.ops.random import Generator, normal_samples, uniform_samples
from ember.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "dirac_", "sparse_"]


_SKIPPING = [False]  # set by nn.utils.skip_init while it builds a module

# Sharded parameters (``distributed.fsdp.fully_shard`` appends its hook): ``hook(tensor)`` gives
# the full shape of the parameter ``tensor`` is this rank's rows ``(lo, hi)`` of, or None. A fill
# of such a piece fills the full shape and keeps the piece's rows, so that with a given seed
# every rank holds its rows of what the unsharded parameter would get (the aim of PyTorch's
# DTensor random ops), fan-based bounds included, and every rank's generator advances alike.
SHARDED_PIECES: list[Callable[[Tensor], tuple[tuple[int, ...], tuple[int, int]] | None]] = []


@contextlib.contextmanager
def skipping() -> Iterator[None]:
    """Within it every fill function of this module returns its tensor untouched (as they
    always do on the meta device, which has no values to fill)."""
    before, _SKIPPING[0] = _SKIPPING[0], True
    try:
        yield
    finally:
        _SKIPPING[0] = before


def _skippable(fill: Callable[..., Tensor]) -> Callable[..., Tensor]:
    @functools.wraps(fill)
    def fill_unless_skipping(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if is_lazy(tensor):  # (PyTorch's error, before the fill reads the missing shape)
            refuse_lazy(fill.__name__)
        if _SKIPPING[0] or tensor.is_meta:
            return tensor
        refuse_inference_write(tensor, f"nn.init.{fill.__name__}")
        whole = _whole(tensor)
        if whole is not None:
            import ember

            shape, (lo, hi) = whole
            full = ember.empty(shape, dtype=tensor.dtype, device=tensor.device)
            return _write(tensor, fill(full, *args, **kwargs)[lo:hi])
        return fill(tensor, *args, **kwargs)
    return fill_unless_skipping


def _whole(tensor: Tensor) -> tuple[tuple[int, ...], tuple[int, int]] | None:
    """The full shape and this rank's rows when ``tensor`` is a piece of a sharded parameter."""
    for whole_of in SHARDED_PIECES:
        found = whole_of(tensor)
        if found is not None:
            return found
    return None


def local_row(tensor: Tensor, row: int) -> int | None:
    """The index in ``tensor`` of row ``row`` (dim 0) of the parameter it holds: ``row``
    itself, or for a ``fully_shard`` piece the row's index in this rank's piece (None when
    another rank's piece holds it). For initialisations that write rows.

    Example:
        >>> weight = ember.ones(4, 2)
        >>> local_row(weight, 1)   # not sharded: the row itself
        1
    """
    whole = _whole(tensor)
    if whole is None:
        return row
    lo, hi = whole[1]
    return row - lo if lo <= row < hi else None


def _write(tensor: Tensor, values: Tensor) -> Tensor:
    with no_grad():
        tensor[...] = values
    return tensor


def _refuse_complex(tensor: Tensor, init: str, why: str) -> None:
    if tensor.dtype.is_complex:
        raise DTypeError(f"nn.init.{init}: {tensor.dtype.name} tensors are not supported "
                         f"({why}), as in PyTorch. Hint: initialise the real and imaginary "
                         f"parts (tensor.real, tensor.imag) on their own")


def _need_floating(tensor: Tensor, init: str) -> None:
    if not tensor.dtype.is_floating_point:
        raise DTypeError(f"nn.init.{init}: expected a floating tensor, got "
                         f"{tensor.dtype.name}, as PyTorch refuses")


def _uniform(tensor: Tensor, a: float, b: float, generator: Generator | None,
             op: str) -> Tensor:
    return _write(tensor, uniform_samples(tensor.shape, a, b, dtype=tensor.dtype,
                                          device=tensor.device, generator=generator,
                                          op=f"nn.init.{op}"))


def _normal(tensor: Tensor, mean: float, std: float, generator: Generator | None) -> Tensor:
    return _write(tensor, normal_samples(tensor.shape, mean, std, dtype=tensor.dtype,
                                         device=tensor.device, generator=generator))


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    Example:
        >>> nn.init.calculate_gain("relu")
        1.4142135623730951
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ArgumentError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ArgumentError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                            f"dimensions (got shape {tuple(tensor.shape)})")
    whole = _whole(tensor)
    shape = tuple(tensor.shape) if whole is None else whole[0]  # (a piece: its parameter's)
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()  # (as PyTorch: "FAN_OUT" too)
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fills ``tensor`` with samples from U(a, b)."""
    return _uniform(tensor, a, b, generator, "uniform_")


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fills ``tensor`` with samples from N(mean, std²)."""
    return _normal(tensor, mean, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """Fills ``tensor`` from N(mean, std²) truncated to ``[a, b]`` (``a``, ``b`` absolute
    values, as in PyTorch).

    Where ``[a, b]`` holds at least a quarter of the normal's mass (as for the usual ``std=0.02``
    in ``[-2, 2]``) it keeps the normal draws that fall inside, drawing again for the rest
    (exact, and about as fast as :func:`normal_`); elsewhere it maps uniforms in
    ``[cdf(a), cdf(b)]`` through the inverse CDF (an upper-tail interval by its mirror image
    in the lower tail, exact however far out); where the density is flat over ``[a, b]`` to
    1e-9 (``std=inf`` too, with finite bounds) a uniform draw. Computed in float64. A NaN or
    infinite ``mean``, or a NaN ``std``, is refused (PyTorch fills values in ``[a, b]``).

    Example:
        >>> w = nn.init.trunc_normal_(ember.empty(3, 4), std=0.02)
        >>> bool((w.abs() <= 2).all())
        True
    """
    import ember

    def cdf(x: float) -> float:
        return math.erfc(-x / math.sqrt(2.0)) / 2.0

    _refuse_complex(tensor, "trunc_normal_", "truncation needs an order")
    _need_floating(tensor, "trunc_normal_")
    if not a <= b:
        raise ArgumentError(f"nn.init.trunc_normal_: the interval [a, b] = [{a}, {b}] is empty. "
                            f"Hint: a is the lower bound, b the upper one (absolute values)")
    if std == 0:
        raise DivisionByZero("nn.init.trunc_normal_: std=0; the bounds are measured in stds "
                             "(PyTorch raises ZeroDivisionError too). Hint: constant_ for a "
                             "fixed value")
    std = abs(std)  # N(mean, std²) is one law for ±std, and PyTorch draws it for std < 0 too
    if not (math.isfinite(mean) and std <= math.inf and (std < math.inf or b - a < math.inf)):
        raise ArgumentError(f"nn.init.trunc_normal_: mean={mean}, std={std} in [{a}, {b}] is "
                            "no distribution (PyTorch fills values in [a, b] anyway). Hint: a "
                            "finite mean and std, or std=inf within finite bounds for a "
                            "uniform draw")
    if math.isinf(a) and a == b:
        raise ArgumentError(f"nn.init.trunc_normal_: the interval [a, b] = [{a}, {b}] holds no "
                            "number")
    # an upper-tail interval is drawn as its mirror image in the lower tail, where the CDF
    # (by erfc) and its inverse (ndtri) keep their precision: 1 - cdf(9) rounds to 0
    flip = (a + b) / 2 > mean
    za, zb = ((mean - b) / std, (mean - a) / std) if flip else ((a - mean) / std, (b - mean) / std)
    lo, hi = cdf(za), cdf(zb)
    n = tensor.numel()
    with no_grad():
        if n == 0:
            return tensor
        if (b - a) / std * (abs(za) + abs(zb)) < 1e-9:
            # the density varies by under 1e-9 over [a, b] (std=inf: not at all), and the
            # inverse CDF would be coarse there (before: all 0 for std=1e308): a uniform draw
            x = ember.rand(n, generator=generator, dtype=ember.float64,
                           device=tensor.device) * (b - a) + a
        elif hi - lo >= 0.25:
            x = _normal_within(n, mean, std, a, b, hi - lo, generator, tensor.device)
        elif -zb > 1e150:
            # the bound nearest the mean lies so many stds out that the tail's width there
            # (std² / distance) is far below float64's spacing at that bound: every draw is it
            # (the rejection below would see c² overflow, or never finish for c = inf)
            x = ember.full((n,), a if flip else b, dtype=ember.float64, device=tensor.device)
        else:
            if hi < 1e-280:  # past ~36 std the CDF underflows
                z = -_far_tail(n, -zb, -za, generator, tensor.device)
            else:
                u = ember.rand(n, generator=generator, dtype=ember.float64, device=tensor.device)
                z = ember.special.ndtri((u * (hi - lo) + lo).clamp(lo, hi)).clamp(za, zb)
            x = (-z if flip else z) * std + mean
        return _write(tensor, x.clamp(a, b).reshape(tensor.shape).to(tensor.dtype))


def _far_tail(n: int, c: float, d: float, generator: Generator | None, device: Any) -> Tensor:
    """``n`` float64 draws of N(0, 1) truncated to ``[c, d]``, ``c`` far in the upper tail, by
    rejection (Robert 1995): from a shifted exponential, or a uniform on ``[c, d]`` where that
    interval is narrower than the tail's scale ``1 / c`` (the exponential's proposals would
    mostly fall past ``d``); most proposals are accepted either way."""
    import ember

    rate = (c + math.sqrt(c * c + 4)) / 2
    narrow = (d - c) * c < 1
    kept: list[Tensor] = []
    have = 0
    while have < n:
        m = (n - have) * 2 + 16
        r = ember.rand(m, generator=generator, dtype=ember.float64, device=device)
        u = ember.rand(m, generator=generator, dtype=ember.float64, device=device).log()
        if narrow:
            t = c + r * (d - c)
            t = t[u <= (t - c) * (t + c) / -2]
        else:
            t = c - r.log() / rate
            t = t[(t <= d) & (u <= -((t - rate) ** 2) / 2)]
        kept.append(t)
        have += t.shape[0]
    return ember.cat(kept)[:n]


def _normal_within(n: int, mean: float, std: float, a: float, b: float, mass: float,
                   generator: Generator | None, device: Any) -> Tensor:
    """``n`` float64 draws of N(mean, std²) that fall in ``[a, b]`` (which holds ``mass`` of
    it), by rejection: each round draws enough for the missing ones, with a small margin."""
    import ember

    kept: list[Tensor] = []
    have = 0
    while have < n:
        draw = ember.randn(math.ceil((n - have) / mass * 1.01) + 16, generator=generator,
                           dtype=ember.float64, device=device) * std + mean
        draw = draw[(draw >= a) & (draw <= b)]
        kept.append(draw)
        have += draw.shape[0]
    return ember.cat(kept)[:n]


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    import ember

    return _write(tensor, ember.full(tuple(tensor.shape), val, dtype=tensor.dtype,
                                     device=tensor.device))


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D ``tensor`` with the identity matrix."""
    import ember

    if tensor.ndim != 2:
        raise ArgumentError("Only tensors with 2 dimensions are supported")
    return _write(tensor, ember.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-b, b) with ``b = gain·√(6 / (fan_in + fan_out))``."""
    bound = gain * math.sqrt(6.0 / _fan_sum(tensor, "xavier_uniform_"))
    return _uniform(tensor, -bound, bound, generator, "xavier_uniform_")


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std²) with ``std = gain·√(2 / (fan_in + fan_out))``."""
    return _normal(tensor, 0.0, gain * math.sqrt(2.0 / _fan_sum(tensor, "xavier_normal_")),
                   generator)


def _fan_sum(tensor: Tensor, op: str) -> float:
    """``fan_in + fan_out``, Glorot's divisor; 0 (a zero-size receptive field) is refused with
    the ZeroDivisionError PyTorch raises."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if fan_in + fan_out == 0:
        raise DivisionByZero(f"nn.init.{op}: fan_in + fan_out is 0 for a tensor of shape "
                             f"{tuple(tensor.shape)}, so Glorot's scale divides by zero")
    return float(fan_in + fan_out)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with ``b = gain·√(3 / fan)``; ``Linear``'s default uses
    ``a=√5``.

    Example:
        >>> nn.init.kaiming_uniform_(ember.empty(4, 3), mode="fan_in", nonlinearity="relu").shape
        ember.Size([4, 3])
    """
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return _uniform(tensor, -bound, bound, generator, "kaiming_uniform_")


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std²) with ``std = gain / √fan``."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return _normal(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fills ``tensor`` (2-D or more, flattened after dim 0) with a (semi-)orthogonal
    matrix times ``gain``, from the QR decomposition of a normal sample."""
    import ember

    _refuse_complex(tensor, "orthogonal_", "it draws a real orthogonal matrix")
    _need_floating(tensor, "orthogonal_")  # (an integer one was silently filled with 0s, ±1s)
    if tensor.ndim < 2:
        raise ArgumentError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = ember.randn(rows, cols, generator=generator, dtype=ember.float64,
                       device=tensor.device)
    if rows < cols:
        flat = flat.t()
    xp: Any = tensor.device.xp
    q, r = xp.linalg.qr(flat.numpy())
    q = q * xp.sign(xp.diagonal(r))[None, :]
    q = ember.from_numpy(q) if tensor.device.type == "cpu" else ember.as_tensor(q)
    if rows < cols:
        q = q.t()
    return _write(tensor, (q * gain).reshape(tuple(tensor.shape)).to(tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D convolution weight with the Dirac delta: each of the first
    ``min(out_channels // groups, in_channels)`` output channels of every group passes its input
    channel through at the kernel's centre, so the convolution keeps its input.

    Example:
        >>> nn.init.dirac_(ember.empty(2, 2, 3))
        tensor([[[0., 1., 0.],
                 [0., 0., 0.]],
        <BLANKLINE>
                [[0., 0., 0.],
                 [0., 1., 0.]]])
    """
    import ember

    if tensor.ndim not in (3, 4, 5):
        raise ArgumentError("Only tensors with 3, 4, or 5 dimensions are supported (a "
                            f"convolution weight), got {tensor.ndim} dimensions of shape "
                            f"{tuple(tensor.shape)}")
    out_channels, in_channels, *kernel = tensor.shape
    if groups == 0:
        raise DivisionByZero("nn.init.dirac_: groups=0; the output channels are split into "
                             "groups, so it must be positive")
    if out_channels % groups != 0:
        raise ArgumentError(f"dim 0 must be divisible by groups: {out_channels} output channels, "
                            f"groups={groups}")
    per_group = out_channels // groups
    passed = range(min(per_group, in_channels))  # the input channels each group passes on
    outputs = [g * per_group + d for g in range(groups) for d in passed]
    inputs = [d for _ in range(groups) for d in passed]
    values = ember.zeros(tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
    values[(outputs, inputs, *(k // 2 for k in kernel))] = 1
    return _write(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Generator | None = None) -> Tensor:
    """Fills a 2-D ``tensor`` from N(0, std²) and zeros ``ceil(sparsity * rows)`` entries of
    every column, at rows drawn uniformly (Martens 2010). ``generator`` drives both draws (in
    PyTorch it drives only the normal values; the zeros' rows come from the global stream).

    Example:
        >>> w = nn.init.sparse_(ember.empty(4, 3), sparsity=0.5)
        >>> (w == 0).sum(0)
        tensor([2, 2, 2])
    """
    import ember

    if tensor.ndim != 2:
        raise ArgumentError("Only tensors with 2 dimensions are supported, got "
                            f"{tensor.ndim} dimensions of shape {tuple(tensor.shape)}")
    if not std >= 0:  # (NaN too, as PyTorch)
        raise ArgumentError(f"nn.init.sparse_: normal expects std >= 0.0, but found std {std}")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    values = ember.randn(rows, cols, generator=generator, dtype=tensor.dtype,
                         device=tensor.device) * std
    # each column's rows in a uniformly random order: the first `zeros` are zeroed
    order = ember.rand(rows, cols, generator=generator, device=tensor.device).argsort(dim=0)
    keep = ember.ones(rows, cols, dtype=ember.bool, device=tensor.device)
    keep = keep.scatter(0, order[:zeros], False)
    return _write(tensor, ember.where(keep, values, ember.zeros((), dtype=tensor.dtype,
                                                               device=tensor.device)))


for _name in __all__[1:]:  # the fill functions (not calculate_gain)
    globals()[_name] = _skippable(globals()[_name])
del _name


def _deprecated(new: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old spelling without the trailing underscore: warns, then calls ``new``."""
    old_name = new.__name__[:-1]

    @functools.wraps(new)
    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new.__name__}`.", FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated spelling of :func:`{new.__name__}` (warns)."
    return deprecated_init


uniform, normal, constant = _deprecated(uniform_), _deprecated(normal_), _deprecated(constant_)
eye, dirac, sparse = _deprecated(eye_), _deprecated(dirac_), _deprecated(sparse_)
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
