"""Connectionist temporal classification: ``ctc_loss``, the negative log-likelihood of a label
sequence summed over every alignment to the (longer) input sequence, by the forward-backward
(alpha-beta) recursion in log space.

``CtcLoss`` is a primitive: the recursion runs on backend arrays, vectorised over the batch
and the extended label positions, with one step per time frame. Its backward is PyTorch's:
the gradient is taken as if ``log_probs`` came from ``log_softmax`` over the classes, i.e.
``exp(log_probs) - posterior / exp(log_probs)``, which differs from the exact derivative by
``softmax`` of each frame, a term that ``log_softmax``'s backward cancels. The gradient is
zero past each sequence's input length; a second derivative is not available (nor is it in
PyTorch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.errors import DTypeError, GradError, IndexOutOfRange, ShapeError, is_floating_input
from ember.ops.loss import _reduction
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, _wrap

__all__: list[str] = []


def _extended(xp: Any, targets: Any, target_lengths: Any, blank: int) -> Any:
    """The labels with a blank before, between and after them: (N, 2·S + 1) class indices,
    from padded (N, S) targets or the 1-D concatenation of every sequence's targets."""
    n = target_lengths.shape[0]
    if targets.ndim == 1:  # concatenated: sequence i starts after the lengths before it
        width = int(target_lengths.max()) if n else 0
        starts = xp.cumsum(target_lengths) - target_lengths
        pos = xp.arange(width)[None, :]
        targets = targets[xp.minimum(starts[:, None] + pos, max(targets.shape[0] - 1, 0))] \
            if targets.shape[0] else xp.zeros((n, width), dtype=xp.int64)
    # (the padding past each length, any value as in PyTorch, becomes the blank)
    targets = xp.where(_within(xp, targets.shape[1], target_lengths), targets, blank)
    labels = xp.full((n, 2 * targets.shape[1] + 1), blank, dtype=xp.int64)
    labels[:, 1::2] = targets
    return labels


def _within(xp: Any, width: int, target_lengths: Any) -> Any:
    """(N, width): whether each padded target position lies within its sequence's length."""
    return xp.arange(width)[None, :] < target_lengths[:, None]


def _lattice(xp: Any, lp: Any, labels: Any, input_lengths: Any, target_lengths: Any) -> tuple:
    """The log-probabilities of each extended label (T, N, L) (-inf past each sequence's
    extended length) and where a label may be reached skipping the blank before it."""
    n, width = labels.shape
    emit = xp.take_along_axis(lp, xp.broadcast_to(labels[None], (lp.shape[0], n, width)), 2)
    s = xp.arange(width)[None, :]
    emit = xp.where((s < 2 * target_lengths[:, None] + 1)[None], emit, -xp.inf)
    skip = xp.zeros((n, width), dtype=bool)
    skip[:, 2:] = (s[:, 2:] % 2 == 1) & (labels[:, 2:] != labels[:, :-2])
    return emit, skip


def _shifted(xp: Any, a: Any, by: int, forward: bool, fill: Any = -float("inf")) -> Any:
    """``a`` moved ``by`` positions along its last axis (later when ``forward``), ``fill``
    coming in."""
    out = xp.full(a.shape, fill, dtype=a.dtype)
    if forward:
        out[:, by:] = a[:, :a.shape[1] - by]
    else:
        out[:, :a.shape[1] - by] = a[:, by:]
    return out


def _alphas(xp: Any, emit: Any, skip: Any, input_lengths: Any) -> Any:
    """log alpha (T, N, L): the log-probability of all prefixes of alignments ending at each
    extended label at each frame (frames past a sequence's length repeat its last one)."""
    alpha = xp.full(emit.shape, -xp.inf, dtype=emit.dtype)
    alpha[0, :, :2] = emit[0, :, :2]
    for t in range(1, emit.shape[0]):
        prev = alpha[t - 1]
        total = xp.logaddexp(prev, _shifted(xp, prev, 1, True))
        total = xp.logaddexp(total, xp.where(skip, _shifted(xp, prev, 2, True), -xp.inf))
        alpha[t] = xp.where((t < input_lengths)[:, None], total + emit[t], prev)
    return alpha


def _betas(xp: Any, emit: Any, skip: Any, input_lengths: Any, target_lengths: Any) -> Any:
    """log beta (T, N, L): the log-probability of all suffixes of alignments from each
    extended label at each frame, the frame's own emission included (-inf past the end)."""
    n, width = skip.shape
    s = xp.arange(width)[None, :]
    last = 2 * target_lengths[:, None]
    ends = (s == last) | (s == last - 1)
    beta = xp.full(emit.shape, -xp.inf, dtype=emit.dtype)
    skip_next = _shifted(xp, skip, 2, False, False)  # s may go on to s + 2
    nxt = xp.full((n, width), -xp.inf, dtype=emit.dtype)
    for t in range(emit.shape[0] - 1, -1, -1):
        total = xp.logaddexp(nxt, _shifted(xp, nxt, 1, False))
        total = xp.logaddexp(total, xp.where(skip_next, _shifted(xp, nxt, 2, False), -xp.inf))
        final = (t == input_lengths - 1)[:, None]
        total = xp.where(final, xp.where(ends, 0.0, -xp.inf), total)
        beta[t] = xp.where((t < input_lengths)[:, None], total + emit[t], -xp.inf)
        nxt = beta[t]
    return beta


def _nll(xp: Any, alpha: Any, input_lengths: Any, target_lengths: Any) -> Any:
    final = alpha[xp.maximum(input_lengths - 1, 0), xp.arange(alpha.shape[1])]  # (N, L)
    last = 2 * target_lengths
    rows = xp.arange(alpha.shape[1])
    end = final[rows, last]
    before = xp.where(target_lengths > 0, final[rows, xp.maximum(last - 1, 0)], -xp.inf)
    empty = xp.where(target_lengths > 0, xp.inf, 0.0)  # no frames: only no labels fit
    return xp.where(input_lengths > 0, -xp.logaddexp(end, before), empty)


def _arrays(xp: Any, lp: Any, targets: Any, input_lengths: Any, target_lengths: Any,
            blank: int) -> tuple:
    lp = lp.astype(xp.float64) if lp.dtype.itemsize < 8 else lp
    il, tl = input_lengths.astype(xp.int64), target_lengths.astype(xp.int64)
    labels = _extended(xp, targets.astype(xp.int64), tl, blank)
    emit, skip = _lattice(xp, lp, labels, il, tl)
    return lp, il, tl, labels, emit, skip


def _check_values(xp: Any, log_probs: Any, targets: Any, il: Any, tl: Any) -> None:
    """What only the lengths' and targets' values tell (so, checked where the op runs)."""
    t_max, n, c = log_probs.shape
    if il.size and (int(il.max()) > t_max or int(il.min()) < 0):
        raise ShapeError(f"ctc_loss: input_lengths must lie in [0, {t_max}] (the log_probs' "
                         f"time steps), got values from {int(il.min())} to {int(il.max())}")
    if tl.size and int(tl.min()) < 0:
        raise ShapeError("ctc_loss: target_lengths must be non-negative")
    if targets.ndim == 2 and tl.size and int(tl.max()) > targets.shape[1]:
        raise ShapeError(f"ctc_loss: padded targets of shape {targets.shape} are shorter than "
                         f"the longest target length {int(tl.max())}")
    if targets.ndim == 1 and int(tl.sum()) != targets.shape[0]:
        raise ShapeError(f"ctc_loss: concatenated targets hold {targets.shape[0]} labels but "
                         f"target_lengths sum to {int(tl.sum())}")
    if targets.ndim == 2:  # (only the labels within each length: padding may be anything)
        targets = targets[_within(xp, targets.shape[1], tl)]
    if targets.size and (int(targets.min()) < 0 or int(targets.max()) >= c):
        raise IndexOutOfRange(f"ctc_loss: targets must be class indices in [0, {c}), got "
                              f"values from {int(targets.min())} to {int(targets.max())}")


@primitive
class CtcLoss(Primitive):
    """Per-sequence CTC negative log-likelihood (N,) of (T, N, C) log-probabilities."""

    name = "ctc_loss"

    def forward(self, xp, log_probs, targets, input_lengths, target_lengths, *, blank,
                zero_infinity):
        _check_values(xp, log_probs, targets, input_lengths, target_lengths)
        lp, il, tl, _, emit, skip = _arrays(xp, log_probs, targets, input_lengths,
                                            target_lengths, blank)
        nll = _nll(xp, _alphas(xp, emit, skip, il), il, tl)
        if zero_infinity:
            nll = xp.where(xp.isinf(nll), 0.0, nll)
        return nll.astype(log_probs.dtype)

    def infer(self, log_probs, targets, input_lengths, target_lengths, **params):
        return TensorSpec((log_probs.shape[1],), log_probs.dtype)

    def vjp(self, ctx, g):
        return apply(CtcLossGrad, g, *ctx.inputs, **ctx.params), None, None, None


@primitive
class CtcLossGrad(Primitive):
    """``ctc_loss``'s gradient with respect to the log-probabilities, PyTorch's form, times
    the (N,) output gradient."""

    name = "ctc_loss_grad"

    def forward(self, xp, g, log_probs, targets, input_lengths, target_lengths, *, blank,
                zero_infinity):
        lp, il, tl, labels, emit, skip = _arrays(xp, log_probs, targets, input_lengths,
                                                 target_lengths, blank)
        alpha = _alphas(xp, emit, skip, il)
        beta = _betas(xp, emit, skip, il, tl)
        nll = _nll(xp, alpha, il, tl)
        both = alpha + beta  # (T, N, L), each frame's emission counted twice
        top = both.max(2, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0.0)
        member = (labels[:, :, None] == xp.arange(lp.shape[2])).astype(lp.dtype)  # (N, L, C)
        summed = xp.einsum("tns,nsc->tnc", xp.exp(both - top), member)
        with xp.errstate(divide="ignore"):
            posterior = xp.exp(xp.log(summed) + top + nll[None, :, None] - lp)
        grad = xp.exp(lp) - posterior
        live = xp.arange(lp.shape[0])[:, None] < il[None, :]
        if zero_infinity:
            live = live & ~xp.isinf(nll)[None, :]
        grad = xp.where(live[:, :, None], grad, 0.0) * g.astype(lp.dtype)[None, :, None]
        return grad.astype(log_probs.dtype)

    def infer(self, g, log_probs, targets, input_lengths, target_lengths, **params):
        return log_probs

    def vjp(self, ctx, gg):
        raise GradError("ctc_loss: its backward is not differentiable (no double backward, as "
                        "in PyTorch). Hint: take second derivatives of another loss")


def _lengths(op: str, what: str, lengths: Tensor | Sequence[int] | int, n: int,
             device: Any) -> Tensor:
    if not isinstance(lengths, Tensor):
        import numpy as np

        lengths = _wrap(device.xp.asarray(np.asarray(lengths, dtype=np.int64)), device)
    if lengths.dtype.is_floating_point or lengths.dtype is dtypes.bool:
        raise DTypeError(f"{op}: {what} must be integers, got {lengths.dtype.name}")
    if lengths.numel() != n or lengths.ndim > 1:
        raise ShapeError(f"{op}: {what} must hold one length per sequence ({n}), got shape "
                         f"{tuple(lengths.shape)}")
    return lengths.reshape((n,))


def ctc_loss(log_probs: Tensor, targets: Tensor,
             input_lengths: Tensor | Sequence[int] | int,
             target_lengths: Tensor | Sequence[int] | int, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss of ``log_probs`` (T, N, C) or (T, C)
    (``log_softmax`` outputs) against ``targets``: padded (N, S), or all sequences'
    labels concatenated (sum(target_lengths),), or (S,) unbatched.

    'mean' divides each sequence's loss by its target length, then averages over the batch.
    ``zero_infinity`` replaces the infinite losses of impossible alignments (and their
    gradients) by zeros.

    Example:
        >>> logp = ember.randn(5, 2, 4).log_softmax(2)
        >>> F.ctc_loss(logp, ember.tensor([[1, 2], [3, 0]]), (5, 4), (2, 1)).shape
        ember.Size([])
    """
    op = "ctc_loss"
    reduction = _reduction(op, None, None, reduction)
    if not is_floating_input(op, "log_probs", log_probs):
        raise DTypeError(f"{op}: log_probs must be floating, got {log_probs.dtype.name}")
    if targets.dtype.is_floating_point or targets.dtype is dtypes.bool:
        raise DTypeError(f"{op}: targets must be integer class indices, got "
                         f"{targets.dtype.name}")
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3) or targets.ndim not in (1, 1 + batched):
        raise ShapeError(f"{op}: expected log_probs (T, N, C) with targets (N, S) or (sum of "
                         f"target lengths,), or log_probs (T, C) with targets (S,); got "
                         f"{tuple(log_probs.shape)} and {tuple(targets.shape)}")
    if not batched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise IndexOutOfRange(f"{op}: blank ({blank}) must be a class index in [0, {c})")
    if targets.ndim == 2 and targets.shape[0] != n:
        raise ShapeError(f"{op}: padded targets of shape {tuple(targets.shape)} must have one "
                         f"row per sequence ({n})")
    input_lengths = _lengths(op, "input_lengths", input_lengths, n, log_probs.device)
    target_lengths = _lengths(op, "target_lengths", target_lengths, n, log_probs.device)
    loss = apply(CtcLoss, log_probs, targets, input_lengths, target_lengths, blank=int(blank),
                 zero_infinity=bool(zero_infinity))
    if reduction == "mean":
        return (loss / target_lengths.clamp(min=1)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.reshape(())
