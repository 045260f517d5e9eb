"""Invertible transforms ``y = f(x)`` with ``log |det df/dx|``, for
:class:`TransformedDistribution` and ``biject_to``/``transform_to``: affine, exp, power,
sigmoid, tanh, abs and their compositions here; simplex, matrix and structural transforms in
their own modules, re-exported from this one.

Example:
    >>> from ember.distributions.transforms import ExpTransform
    >>> t = ExpTransform()
    >>> t.inv(t(ember.tensor([0.0])))
    tensor([0.])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.utils import broadcast_all, sum_rightmost
from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform"]

F = ember.nn.functional


class Transform:
    """A map with an inverse and the log absolute determinant of its Jacobian.

    With ``cache_size=1`` the last ``(x, y)`` pair is remembered, so ``inv(t(x))`` returns
    ``x`` itself (no round-off, and ``atanh(tanh(x))`` cannot overflow).

    ``bijective`` is False unless a subclass declares itself a bijection (as in PyTorch):
    only then is ``inv`` an exact inverse with ``log_abs_det_jacobian`` defined.

    Example:
        >>> t = ExpTransform()
        >>> x = ember.tensor([0.0, 1.0])
        >>> t.log_abs_det_jacobian(x, t(x)), t.bijective, t.inv.codomain
        (tensor([0., 1.]), True, Real())
    """

    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    bijective = False

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ArgumentError(f"{type(self).__name__}: cache_size must be 0 or 1, got "
                                f"{cache_size}")
        self._cache_size = cache_size
        self._cached: tuple[Tensor, Tensor] | None = None
        self._inv: Transform | None = None

    @property
    def event_dim(self) -> int:
        """The event dim shared by the domain and codomain; a transform that changes it (such
        as ``StickBreakingTransform``) raises, as in PyTorch: ask ``domain`` or ``codomain``."""
        domain, codomain = self.domain.event_dim, self.codomain.event_dim
        if domain != codomain:
            raise ArgumentError(f"{type(self).__name__}.event_dim: the domain's event dim "
                                f"({domain}) and the codomain's ({codomain}) differ; use "
                                ".domain.event_dim or .codomain.event_dim")
        return domain

    @property
    def sign(self) -> Any:
        """+1 or -1 for a monotone increasing or decreasing elementwise map; other transforms
        raise, as in PyTorch."""
        raise NotImplementedError(f"{type(self).__name__} has no sign: only monotone "
                                  "elementwise transforms define one")

    @property
    def inv(self) -> Transform:
        """The inverse transform, made once: ``t.inv is t.inv`` and ``t.inv.inv is t``."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size."""
        if cache_size == self._cache_size:
            return self
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._cache_size, new._cached, new._inv = cache_size, None, None
        return new

    def __call__(self, x: Tensor) -> Tensor:
        if self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement the forward map")

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement the inverse map")

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|``, summed over the transform's event dims."""
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  "log_abs_det_jacobian")

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The output shape for an input of ``shape``."""
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The input shape for an output of ``shape``."""
        return shape

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _transform_list(owner: str, name: str, seq: Sequence[Any]) -> list[Transform]:
    """``seq`` as a list, each item checked to be a Transform."""
    seq = list(seq)
    for t in seq:
        if not isinstance(t, Transform):
            raise ArgumentTypeError(f"{owner}: {name} must be Transform instances, got "
                                    f"{type(t).__name__}; hint: e.g. [ExpTransform(), "
                                    "AffineTransform(0.0, 2.0)]")
    return seq


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self) -> int:
        return hash(("inverse", self._inv))

    def __repr__(self) -> str:
        return f"{self._inv!r}.inv"


class ComposeTransform(Transform):
    """Applies ``parts`` in order: ``ComposeTransform([f, g])(x) == g(f(x))``.

    Example:
        >>> t = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
        >>> t(ember.tensor(0.0))
        tensor(1.)
    """

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size)
        parts = _transform_list("ComposeTransform", "parts", parts)
        self.parts = [p.with_cache(cache_size) if cache_size else p for p in parts]

    def _event_dims(self) -> tuple[int, int]:
        """Event dims of the whole map's input and output: a part that works on vectors
        makes every later (and earlier) elementwise part see vectors too."""
        dim_in = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            dim_in = max(dim_in + part.domain.event_dim - part.codomain.event_dim,
                         part.domain.event_dim)
        dim_out = self.parts[0].domain.event_dim
        for part in self.parts:
            dim_out = max(dim_out + part.codomain.event_dim - part.domain.event_dim,
                          part.codomain.event_dim)
        return dim_in, dim_out

    @staticmethod
    def _widen(c: constraints.Constraint, event_dim: int) -> constraints.Constraint:
        return c if event_dim <= c.event_dim else constraints.independent(c, event_dim
                                                                          - c.event_dim)

    @property
    def domain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        return self._widen(self.parts[0].domain, self._event_dims()[0])

    @property
    def codomain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        return self._widen(self.parts[-1].codomain, self._event_dims()[1])

    bijective = property(lambda self: all(p.bijective for p in self.parts))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        """The parts' inverses in reverse order, made once and linked back, so
        ``t.inv.inv is t`` (as in PyTorch, the inverse itself has ``cache_size`` 0 while its
        parts keep theirs)."""
        if self._inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv, inv._inv = inv, self
        return self._inv

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inv_call(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Tensor | float = 0.0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            term = part.log_abs_det_jacobian(a, b)
            total = total + sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(tuple(self.parts))

    def __repr__(self) -> str:
        return f"ComposeTransform({self.parts!r})"


class AffineTransform(Transform):
    """``y = loc + scale * x``; with ``event_dim`` > 0 the Jacobian term is summed over that
    many rightmost dims.

    Example:
        >>> AffineTransform(1.0, 2.0)(ember.tensor([0.0, 1.0]))
        tensor([1., 3.])
    """

    bijective = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self) -> constraints.Constraint:
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Number):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, numbers.Number):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = ember.log(self.scale.abs())
            result = result.expand(ember.broadcast_shapes(result.shape, x.shape))
        return sum_rightmost(result, self._event_dim)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return ember.broadcast_shapes(shape, *(p.shape for p in (self.loc, self.scale)
                                               if isinstance(p, Tensor)))

    inverse_shape = forward_shape

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform) or self._event_dim != other._event_dim:
            return False
        return all(_same(a, b) for a, b in ((self.loc, other.loc), (self.scale, other.scale)))

    def __hash__(self) -> int:
        return hash((AffineTransform, self._event_dim))

    def __repr__(self) -> str:
        return f"AffineTransform(loc={self.loc}, scale={self.scale})"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and bool((a == b).all())
    return False


class ExpTransform(Transform):
    """``y = exp(x)``, from the reals onto the positive reals.

    Example:
        >>> ExpTransform()(ember.tensor([0.0, 1.0]))
        tensor([1.0000, 2.7183])
    """

    codomain = constraints.positive
    bijective = True
    sign = 1

    def _call(self, x: Tensor) -> Tensor:
        return ember.exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return ember.log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, from the reals onto the unit interval (kept inside
    ``[tiny, 1 - eps]`` of the dtype, as in PyTorch, so the inverse stays finite).

    Example:
        >>> SigmoidTransform()(ember.tensor([0.0]))
        tensor([0.5000])
    """

    codomain = constraints.unit_interval
    bijective = True
    sign = 1

    @staticmethod
    def _clip(y: Tensor) -> Tensor:
        finfo = ember.finfo(y.dtype)
        return y.clamp(min=finfo.tiny, max=1 - finfo.eps)

    def _call(self, x: Tensor) -> Tensor:
        return self._clip(ember.sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = self._clip(y)
        return ember.log(y) - ember.log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``, from the reals onto the positive reals; the inverse is
    ``x = y + log(-expm1(-y))``.

    Example:
        >>> t = SoftplusTransform()
        >>> t(ember.tensor([0.0, 20.0]))
        tensor([ 0.6931, 20.0000])
    """

    codomain = constraints.positive
    bijective = True
    sign = 1

    def _call(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y + ember.log(-ember.expm1(-y))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x)  # log(sigmoid(x))


class TanhTransform(Transform):
    """``y = tanh(x)``, from the reals onto ``(-1, 1)``; use ``cache_size=1`` when the
    samples' log-probabilities are needed (as for a squashed Gaussian policy).

    Example:
        >>> t = TanhTransform(cache_size=1)
        >>> y = t(ember.tensor([30.0]))
        >>> t.inv(y)  # the cached input, where atanh(1.0) would be inf
        tensor([30.])
    """

    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = 1

    def _call(self, x: Tensor) -> Tensor:
        return ember.tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2), written with softplus so large |x| does not lose it all
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals; decreasing where the exponent is negative.

    Example:
        >>> PowerTransform(ember.tensor(2.0))(ember.tensor([3.0]))
        tensor([9.])
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        (self.exponent,) = broadcast_all(exponent, owner="PowerTransform")

    @property
    def sign(self) -> Tensor:
        return self.exponent.sign()

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log|exponent| + (exponent - 1) log|x|``, in logs: PyTorch's ``log|exponent y /
        x|`` underflows to ``-inf`` once ``x ** (exponent - 1)`` does (``InverseGamma``'s
        ``log_prob(1e200)``, float32 ``Weibull(1, 50).log_prob(1e-7)``)."""
        return ember.log(self.exponent.abs()) + ember.xlogy(self.exponent - 1, x.abs())

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return ember.broadcast_shapes(shape, self.exponent.shape)

    inverse_shape = forward_shape

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and _same(self.exponent, other.exponent)

    def __hash__(self) -> int:
        return hash(PowerTransform)

    def __repr__(self) -> str:
        return f"PowerTransform(exponent={self.exponent})"


class AbsTransform(Transform):
    """``y = |x|``; not bijective: its inverse returns the non-negative pre-image.

    Example:
        >>> AbsTransform()(ember.tensor([-2.0, 3.0]))
        tensor([2., 3.])
    """

    codomain = constraints.positive
    bijective = False

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


identity_transform = ComposeTransform([])
"""The identity map (an empty :class:`ComposeTransform`), as in PyTorch."""

# The other transforms live in their own modules, which build on Transform above.
from ember.distributions.matrix_transforms import (  # noqa: E402
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from ember.distributions.simplex_transforms import (  # noqa: E402
    SoftmaxTransform,
    StickBreakingTransform,
)
from ember.distributions.structural_transforms import (  # noqa: E402
    CatTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    ReshapeTransform,
    StackTransform,
)
