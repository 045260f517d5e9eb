"""``binary_cross_entropy_with_logits``'s elementwise terms as one primitive: the loss
``(1 - t)·softplus(x) + p·t·softplus(-x)`` (``p`` the positive weight, 1 without one; equal
to PyTorch's ``(1 - t)·x + (1 + (p - 1)·t)·softplus(-x)``), and the input gradient
``(1 - t)·sigmoid(x) - p·t·sigmoid(-x)``. As a composite of ``logsigmoid`` that gradient
came out as ``(1 - t) - w·sigmoid(-x)``, which cancels where ``sigmoid(x) - t`` is tiny (0 at
x = -40, t = 0; 9e-5 relative error at x = -27.6), and so does PyTorch's value there (2e-3
relative at x = -27.6); writing the loss so that autograd formed the precise gradient saved
``-x`` as well as ``x``. At ``x = ±inf`` a zero weight times the infinite softplus counts as
0 (the limit; PyTorch's ``0 * inf`` is NaN), so ``Bernoulli(logits=inf).log_prob(1)`` is 0.
The primitive saves ``x`` and ``t`` (and ``p``), as PyTorch's kernel, and its rules are Ember
ops, so every order of derivative follows.

Example:
    >>> bce_logits_terms(ember.tensor([0.0, -40.0]), ember.tensor([1.0, 0.0]))
    tensor([6.9315e-01, 4.2484e-18])
"""

from __future__ import annotations

from ember.ops.activations import softplus
from ember.ops.bce import _same_specs
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.unary import in_float32, sigmoid
from ember.tensor import Tensor

__all__: list[str] = []


@primitive
class BinaryCrossEntropyWithLogits(Primitive):
    """``(1 - t)·softplus(x) + p·t·softplus(-x)`` for logits ``x``, targets ``t`` and, when
    given, positive weights ``p`` (else 1), all of one shape and dtype (see the module
    docstring)."""

    name = "binary_cross_entropy_with_logits"
    backward_name = "BinaryCrossEntropyWithLogitsBackward0"
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, x, t, *p):
        # (1 - t)·softplus(x) + p·t·softplus(-x): no difference of near-equal values where
        # the prediction is confident, so the value keeps its digits as the gradient does
        tail = xp.log1p(xp.exp(-xp.abs(x)))
        kept, positive = 1 - t, (t if not p else p[0] * t)
        out = kept * (tail + xp.maximum(x, 0)) + positive * (tail + xp.maximum(-x, 0))
        infinite = xp.isinf(x)
        if infinite.any():  # (a weight of 0 times softplus(inf) is 0, the limit, not NaN)
            weight = xp.where(x > 0, kept, positive)
            out = xp.where(infinite, xp.where(weight == 0, 0, xp.inf * xp.sign(weight)), out)
        return out

    def infer(self, x, t, *p):
        return _same_specs(self.name, x, t, *p)

    def vjp(self, ctx, g):
        x, t, *p = ctx.inputs
        grads = (g * _slope(x, t, p) if x.requires_grad else None,
                 g * _target_slope(x, p) if t.requires_grad else None)
        if p:
            grads += (g * (t * softplus(-x, threshold=float("inf"))) if p[0].requires_grad
                      else None,)
        return grads

    def jvp(self, ctx, dx, dt, *dp):
        x, t, *p = ctx.inputs
        parts = [] if dx is None else [dx * _slope(x, t, p)]
        if dt is not None:
            parts.append(dt * _target_slope(x, p))
        if dp and dp[0] is not None:
            parts.append(dp[0] * (t * softplus(-x, threshold=float("inf"))))
        out = parts[0]
        for part in parts[1:]:
            out = out + part
        return out

    def flops(self, x, t, *p):
        n = 1
        for d in x.shape:
            n *= d
        return 8 * n


def _slope(x: Tensor, t: Tensor, p: list) -> Tensor:
    """The loss's derivative in ``x``, each term a product (no difference of near-equal
    values where the prediction is confident)."""
    positive = t if not p else p[0] * t
    return (1 - t) * sigmoid(x) - positive * sigmoid(-x)


def _target_slope(x: Tensor, p: list) -> Tensor:
    """The loss's derivative in ``t``: ``p·softplus(-x) - softplus(x)`` (``-x`` for p = 1)."""
    return -x if not p else (p[0] * softplus(-x, threshold=float("inf"))
                             - softplus(x, threshold=float("inf")))


def bce_logits_terms(x: Tensor, t: Tensor, pos_weight: Tensor | None = None) -> Tensor:
    """Each element's binary cross entropy with logits (the primitive); ``pos_weight`` already
    expanded to the shape of ``x``. The caller checks the operands and reduces."""
    return apply(BinaryCrossEntropyWithLogits, x, t, *(() if pos_weight is None
                                                         else (pos_weight,)))
