"""The pointwise part of an LSTM and a GRU step as primitives, each way: from the projected
input ``x`` (``x W_ihᵀ + b_ih``), the projected state ``hp`` (``h W_hhᵀ + b_hh``) and the
state, the new state in one kernel, and the gradients in one more. As a composite a step was
~12 primitives forward and as many backward (add, chunk, 3 sigmoid, 2 tanh, 3 mul, add…), and
an LSTM of 8 steps at batch 32 spent 94 % of its time outside the matrix products.

``lstm_gates(x, hp, c) -> (h', c')``: gates ``i, f, g, o`` of ``x + hp`` (PyTorch's order),
``c' = σ(f)·c + σ(i)·tanh(g)``, ``h' = σ(o)·tanh(c')``. ``gru_gates(x, hp, h) -> h'``: gates
``r, z, n``, ``h' = (1 - z)·n + z·h`` with ``n = tanh(x_n + r·hp_n)``. The kernels round as
the composites (:func:`lstm_composite`, :func:`gru_composite`) do, operation for operation.

The gradient primitives' own rules come from their composites in Ember ops (reverse mode
through the tape, forward mode through :func:`ember.autograd.forward.jvp`), so every order
of derivative follows. Float32 and float64 operands of one dtype take the kernels; anything
else (half precision, the mixed dtypes of autocast) the composite, whose per-op rounding in
low precision is what it was.

Example:
    >>> h, c = lstm_gates(ember.zeros(1, 8), ember.zeros(1, 8), ember.ones(1, 2))
    >>> c
    tensor([[0.5000, 0.5000]])
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ember import dtypes
from ember.autograd.grad_mode import GRAD, enable_grad
from ember.errors import DTypeError, ShapeError
from ember.ops.creation import zeros_like
from ember.ops.join import cat
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.unary import sigmoid_array
from ember.tensor import Tensor

__all__: list[str] = []

_FUSED = (dtypes.float32, dtypes.float64)


# -- the composites: the kernels' rounding, and the rules' source ------------------------------
def lstm_composite(x: Tensor, hp: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """The LSTM step's pointwise part in Ember ops: ``(h', c')``."""
    i, f, g, o = (x + hp).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_composite(x: Tensor, hp: Tensor, h: Tensor) -> Tensor:
    """The GRU step's pointwise part in Ember ops: ``h'``."""
    xr, xz, xn = x.chunk(3, -1)
    hr, hz, hn = hp.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


def _lstm_backward_composite(gh: Tensor, gc: Tensor, x: Tensor, hp: Tensor,
                             c: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`lstm_composite`'s gradients in Ember ops: ``(d gates, d c)``."""
    ai, af, ag, ao = (x + hp).chunk(4, -1)
    i, f, g, o = ai.sigmoid(), af.sigmoid(), ag.tanh(), ao.sigmoid()
    t = (f * c + i * g).tanh()
    s = gh * o * (1 - t * t) + gc
    da = cat([s * g * (i * (1 - i)), s * c * (f * (1 - f)), s * i * (1 - g * g),
              gh * t * (o * (1 - o))], -1)
    return da, s * f


def _gru_backward_composite(gh: Tensor, x: Tensor, hp: Tensor,
                            h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`gru_composite`'s gradients in Ember ops: ``(d x, d hp, d h)``."""
    xr, xz, xn = x.chunk(3, -1)
    hr, hz, hn = hp.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    du = gh * (1 - z) * (1 - n * n)
    dr, dz = du * hn * (r * (1 - r)), (gh * h - gh * n) * (z * (1 - z))
    return cat([dr, dz, du], -1), cat([dr, dz, du * r], -1), gh * z


# -- rules shared by the four primitives ------------------------------------------------------
def _composite_jvp(composite: Callable, ctx, tangents: tuple):
    """The tangents of ``composite``'s outputs at the node's inputs."""
    from ember.autograd.forward import jvp

    return jvp(composite, tuple(ctx.inputs), tangents)[1]


def _composite_vjp(composite: Callable, ctx, cotangents: tuple) -> tuple:
    """The input gradients of ``composite`` at the node's inputs, by the tape (recorded
    where the backward is: under ``create_graph``). The composite reads an alias of each
    input, so each gradient is the partial one even where one input was computed from
    another (a gradient from the states it is the gradient of); the graph is retained, as
    freeing it would free the nodes beyond the aliases too."""
    from ember.autograd.engine import grad
    from ember.autograd.forward import alias

    create = GRAD.enabled
    with enable_grad():
        inputs = [alias(t) for t in ctx.inputs]
        outs = composite(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pairs = [(o, u) for o, u in zip(outs, cotangents) if u is not None and o.requires_grad]
        wanted = [t for t in inputs if t.requires_grad]
        if not pairs:
            return (None,) * len(inputs)
        found = iter(grad([o for o, _ in pairs], wanted, [u for _, u in pairs],
                          retain_graph=True, create_graph=create, allow_unused=True))
    return tuple(next(found) if t.requires_grad else None for t in inputs)


def _check(op: str, x: TensorSpec, hp: TensorSpec, state: TensorSpec, gates: int) -> None:
    lead, width = tuple(state.shape[:-1]), state.shape[-1] if state.shape else None
    want = lead + (gates * width,) if width is not None else None
    if tuple(x.shape) != want or tuple(hp.shape) != want:
        raise ShapeError(f"{op}: gates {tuple(x.shape)} and {tuple(hp.shape)} must both be "
                         f"the state's {tuple(state.shape)} with {gates} times its last size")
    if not (x.dtype is hp.dtype is state.dtype) or not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected floating operands of one dtype, got {x.dtype.name}, "
                         f"{hp.dtype.name} and {state.dtype.name}")


def _or_zeros(g: Tensor | None, like: Tensor) -> Tensor:
    return zeros_like(like) if g is None else g


# -- LSTM -----------------------------------------------------------------------------------
@primitive
class LSTMGates(Primitive):
    """``(h', c')`` of an LSTM step from its projected input and state and ``c``."""

    name = "lstm_gates"
    nout = 2
    allocates = True

    def forward(self, xp, x, hp, c):
        k = c.shape[-1]
        a = xp.add(x, hp)
        fi = sigmoid_array(xp, a[..., :2 * k])
        c2 = fi[..., k:] * c
        c2 += fi[..., :k] * xp.tanh(a[..., 2 * k:3 * k])
        return sigmoid_array(xp, a[..., 3 * k:]) * xp.tanh(c2), c2

    def infer(self, x, hp, c):
        _check(self.name, x, hp, c, 4)
        return TensorSpec(c.shape, c.dtype), TensorSpec(c.shape, c.dtype)

    def vjp(self, ctx, gh, gc):
        x, hp, c = ctx.inputs
        da, dc = apply(LSTMGatesBackward, _or_zeros(gh, c), _or_zeros(gc, c), x, hp, c)
        return (da if x.requires_grad else None, da if hp.requires_grad else None,
                dc if c.requires_grad else None)

    def jvp(self, ctx, dx, dhp, dc):
        return _composite_jvp(lstm_composite, ctx, (dx, dhp, dc))

    def flops(self, x, hp, c):
        return math.prod(x.shape) + 4 * math.prod(c.shape)


@primitive
class LSTMGatesBackward(Primitive):
    """:class:`LSTMGates`' gradients ``(d gates, d c)`` from ``(g h', g c')``, recomputing
    the gates from ``x``, ``hp`` and ``c``."""

    name = "lstm_gates_backward"
    nout = 2
    allocates = True

    def forward(self, xp, gh, gc, x, hp, c):
        k = c.shape[-1]
        a = xp.add(x, hp)
        fi = sigmoid_array(xp, a[..., :2 * k])
        i, f = fi[..., :k], fi[..., k:]
        g = xp.tanh(a[..., 2 * k:3 * k])
        o = sigmoid_array(xp, a[..., 3 * k:])
        t = f * c
        t += i * g
        xp.tanh(t, out=t)
        s = gh * o
        s *= 1 - t * t
        s += gc
        da = a  # (each block of a read before it is written)
        da[..., :k] = (s * g) * (i * (1 - i))
        da[..., k:2 * k] = (s * c) * (f * (1 - f))
        da[..., 2 * k:3 * k] = (s * i) * (1 - g * g)
        da[..., 3 * k:] = (gh * t) * (o * (1 - o))
        return da, s * f

    def infer(self, gh, gc, x, hp, c):
        _check(self.name, x, hp, c, 4)
        if tuple(gh.shape) != tuple(c.shape) or tuple(gc.shape) != tuple(c.shape) or \
                gh.dtype is not c.dtype or gc.dtype is not c.dtype:
            raise ShapeError(f"{self.name}: gradients {gh.dtype.name} {tuple(gh.shape)} and "
                             f"{gc.dtype.name} {tuple(gc.shape)} must be the state's "
                             f"{c.dtype.name} {tuple(c.shape)}")
        return TensorSpec(x.shape, x.dtype), TensorSpec(c.shape, c.dtype)

    def vjp(self, ctx, ua, uc):
        return _composite_vjp(_lstm_backward_composite, ctx, (ua, uc))

    def jvp(self, ctx, *tangents):
        return _composite_jvp(_lstm_backward_composite, ctx, tangents)

    def flops(self, gh, gc, x, hp, c):
        return math.prod(x.shape) + 16 * math.prod(c.shape)


# -- GRU ------------------------------------------------------------------------------------
@primitive
class GRUGates(Primitive):
    """``h'`` of a GRU step from its projected input and state and ``h``."""

    name = "gru_gates"
    allocates = True

    def forward(self, xp, x, hp, h):
        k = h.shape[-1]
        rz = sigmoid_array(xp, xp.add(x[..., :2 * k], hp[..., :2 * k]))
        z = rz[..., k:]
        n = rz[..., :k] * hp[..., 2 * k:]
        n += x[..., 2 * k:]
        xp.tanh(n, out=n)
        n *= 1 - z
        n += z * h
        return n

    def infer(self, x, hp, h):
        _check(self.name, x, hp, h, 3)
        return TensorSpec(h.shape, h.dtype)

    def vjp(self, ctx, g):
        x, hp, h = ctx.inputs
        dx, dhp, dh = apply(GRUGatesBackward, g, x, hp, h)
        return (dx if x.requires_grad else None, dhp if hp.requires_grad else None,
                dh if h.requires_grad else None)

    def jvp(self, ctx, dx, dhp, dh):
        return _composite_jvp(gru_composite, ctx, (dx, dhp, dh))

    def flops(self, x, hp, h):
        return 8 * math.prod(h.shape)


@primitive
class GRUGatesBackward(Primitive):
    """:class:`GRUGates`' gradients ``(d x, d hp, d h)`` from ``g h'``, recomputing the gates
    from ``x``, ``hp`` and ``h``."""

    name = "gru_gates_backward"
    nout = 3
    allocates = True

    def forward(self, xp, g, x, hp, h):
        k = h.shape[-1]
        rz = sigmoid_array(xp, xp.add(x[..., :2 * k], hp[..., :2 * k]))
        r, z = rz[..., :k], rz[..., k:]
        hn = hp[..., 2 * k:]
        n = xp.tanh(x[..., 2 * k:] + r * hn)
        du = g * (1 - z)
        du *= 1 - n * n
        dx = xp.empty(x.shape, x.dtype)
        dx[..., :k] = (du * hn) * (r * (1 - r))
        dx[..., k:2 * k] = (g * h - g * n) * (z * (1 - z))
        dx[..., 2 * k:] = du
        dhp = dx.copy()
        dhp[..., 2 * k:] *= r
        return dx, dhp, g * z

    def infer(self, g, x, hp, h):
        _check(self.name, x, hp, h, 3)
        if tuple(g.shape) != tuple(h.shape) or g.dtype is not h.dtype:
            raise ShapeError(f"{self.name}: gradient {g.dtype.name} {tuple(g.shape)} must be "
                             f"the state's {h.dtype.name} {tuple(h.shape)}")
        return TensorSpec(x.shape, x.dtype), TensorSpec(hp.shape, hp.dtype), \
            TensorSpec(h.shape, h.dtype)

    def vjp(self, ctx, ux, uhp, uh):
        return _composite_vjp(_gru_backward_composite, ctx, (ux, uhp, uh))

    def jvp(self, ctx, *tangents):
        return _composite_jvp(_gru_backward_composite, ctx, tangents)

    def flops(self, g, x, hp, h):
        return 16 * math.prod(h.shape)


def _fused(*operands: Tensor) -> bool:
    """Whether the kernels take these operands: float32 or float64, all of one dtype."""
    dtype = operands[0].dtype
    return dtype in _FUSED and all(t.dtype is dtype for t in operands)


def lstm_gates(x: Tensor, hp: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """``(h', c')`` of an LSTM step from the projected input ``x``, the projected state
    ``hp`` (both ``(…, 4H)``, gates i, f, g, o) and the cell state ``c`` (``(…, H)``)."""
    return apply(LSTMGates, x, hp, c) if _fused(x, hp, c) else lstm_composite(x, hp, c)


def gru_gates(x: Tensor, hp: Tensor, h: Tensor) -> Tensor:
    """``h'`` of a GRU step from the projected input ``x``, the projected state ``hp`` (both
    ``(…, 3H)``, gates r, z, n) and the state ``h`` (``(…, H)``)."""
    return apply(GRUGates, x, hp, h) if _fused(x, hp, h) else gru_composite(x, hp, h)
