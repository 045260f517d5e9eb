"""Margin, ranking and embedding losses under ``torch.nn.functional``'s names:
margin_ranking_loss, hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
multi_margin_loss, multilabel_margin_loss, cosine_embedding_loss, triplet_margin_loss and
triplet_margin_with_distance_loss. All are composites of elementwise ops, reductions and
``gather``; no gradient flows to targets."""

from __future__ import annotations

from collections.abc import Callable

from ember.errors import ArgumentError, DTypeError, ShapeError, is_complex_input
from ember.ops.activations import logsigmoid
from ember.ops.broadcast import broadcast_shapes
from ember.ops.convert import cast, float32_under_autocast
from ember.ops.creation import arange
from ember.ops.distance import pairwise_distance
from ember.ops.gather import class_indices
from ember.ops.loss import _check_float, _reduce, _reduction, refuse_weight_grad, weight_in
from ember.ops.scan import cumsum
from ember.ops.select import minimum, where
from ember.tensor import Tensor

__all__: list[str] = []


@float32_under_autocast
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -y·(x1 - x2) + margin)``: ``x1`` should rank above ``x2`` where ``y = 1``.

    Example:
        >>> F.margin_ranking_loss(ember.tensor([2.0]), ember.tensor([1.0]), ember.tensor([1.0]))
        tensor(0.)
    """
    op = "margin_ranking_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input1)
    operands = (input1, input2, target)  # (a non-tensor is refused by the arithmetic below)
    if all(isinstance(t, Tensor) for t in operands) and len({t.ndim for t in operands}) > 1:
        raise ShapeError(f"{op}: input1, input2 and target must have the same number of "
                         f"dimensions, got shapes {tuple(input1.shape)}, "
                         f"{tuple(input2.shape)} and {tuple(target.shape)}")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@float32_under_autocast
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1`` (for distances ``x``).

    Example:
        >>> F.hinge_embedding_loss(ember.tensor([0.3, 0.3]), ember.tensor([1.0, -1.0]))
        tensor(0.5000)
    """
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    _check_float("hinge_embedding_loss", input)
    far = where(target != 1, (margin - input).clamp(min=0), 0.0)
    near = where(target != -1, input, 0.0)
    return _reduce(far + near, reduction)


@float32_under_autocast
def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-y·x))`` for labels ``y`` in {-1, 1}, computed stably.

    Example:
        >>> F.soft_margin_loss(ember.tensor([0.0]), ember.tensor([1.0]))
        tensor(0.6931)
    """
    op = "soft_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    if target.shape != input.shape and broadcast_shapes(
            tuple(input.shape), tuple(target.shape), op=op) != tuple(input.shape):
        raise ShapeError(f"{op}: the target's shape {tuple(target.shape)} must broadcast to "
                         f"the input's {tuple(input.shape)}")
    if isinstance(target, Tensor) and target.dtype != input.dtype:
        target = cast(target, input.dtype)  # PyTorch computes in the input's dtype
    return _reduce(-logsigmoid(target * input), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Binary cross entropy of ``sigmoid(x)`` per class, averaged over the classes (last
    dim), for multi-label 0/1 targets.

    Example:
        >>> F.multilabel_soft_margin_loss(ember.tensor([[0.0, 0.0]]), ember.tensor([[1.0, 0.0]]))
        tensor(0.6931)
    """
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    if input.ndim == 0:
        raise ShapeError(f"{op}: expected an input of shape (C,) or (N, C), got a 0-d tensor")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    # the input's class dim, as PyTorch (a target that broadcasts it adds leading dims)
    return _reduce(loss.sum(input.ndim - 1) / input.shape[-1], reduction)


@float32_under_autocast
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``Σ_{i≠y} max(0, margin - x[y] + x[i])^p / C`` per sample, for
    logits (N, C) or (C,) and class indices (N,) or ().

    Example:
        >>> F.multi_margin_loss(ember.tensor([[0.1, 0.8, 0.2]]), ember.tensor([1]))
        tensor(0.2333)
    """
    op = "multi_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    if p not in (1, 2):
        raise ArgumentError(f"{op}: only p = 1 and p = 2 are supported, got {p}")
    if target.dtype.is_floating_point:
        raise DTypeError(f"{op}: targets must be class indices, got {target.dtype.name}")
    if input.ndim > 2 or 0 in input.shape[1:] or (input.ndim == 1 and input.numel() == 0):
        raise ShapeError(f"{op}: expected a non-empty input of shape (C,) or (N, C), got "
                         f"{tuple(input.shape)}")
    x = input if input.ndim == 2 else input.reshape((1, -1))
    n, c = x.shape
    if target.numel() != n or target.ndim > 1:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} needs a target of "
                         f"shape {(n,) if input.ndim == 2 else ()}, got "
                         f"{tuple(target.shape)}")
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"{op}: weight must have shape ({c},) (one per class), got "
                         f"{tuple(weight.shape)}")
    refuse_weight_grad(op, weight)
    weight = weight_in(weight, input)
    t = class_indices(target.reshape((n, 1)), c, op)  # (n, 1), checked where it runs
    # The target class itself does not count: masked, not scaled by 0 (its term is
    # inf - inf = NaN for an infinite logit)
    others = arange(c, device=input.device) != t
    terms = where(others, _hinge(margin - x.gather(1, t) + x), 0.0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.detach()[t]
    loss = terms.sum(1) / c
    # the target's rank, as PyTorch: (C,) logits with a (1,) target give (1,)
    return _reduce(loss if target.ndim == 1 else loss.reshape(()), reduction)


@float32_under_autocast
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``y = 1``, ``max(0, cos(x1, x2) - margin)`` where ``y = -1``.

    Example:
        >>> F.cosine_embedding_loss(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 0.0]]),
        ...                         ember.tensor([1.0]))
        tensor(0.)
    """
    op = "cosine_embedding_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    for name, x in (("input1", input1), ("input2", input2)):
        if is_complex_input(op, name, x):  # (integer and bool inputs give a float loss)
            raise DTypeError(f"{op}: expected a real {name}, got {x.dtype.name}. Hint: pass "
                             f"x.abs() or view_as_real(x)")
    if target.ndim > 1 or not input1.ndim == input2.ndim == target.ndim + 1:
        raise ShapeError(f"{op}: expected inputs of shape (D,) with a 0-d target or (N, D) "
                         f"with a (N,) target, got {tuple(input1.shape)}, "
                         f"{tuple(input2.shape)} and {tuple(target.shape)}")
    dim = input1.ndim - 1
    tiny = 1e-12  # as PyTorch, inside each squared magnitude
    cos = (input1 * input2).sum(dim) / (((input1 * input1).sum(dim) + tiny)
                                        * ((input2 * input2).sum(dim) + tiny)).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0),
                                                    0.0)
    return _reduce(loss, reduction)


def _triplet(op: str, anchor: Tensor, positive: Tensor, negative: Tensor,
             distance: Callable[[Tensor, Tensor], Tensor], margin: float, swap: bool,
             reduction: str) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)``, with ``min(d(a, n), d(p, n))`` under ``swap``."""
    if margin <= 0:
        raise ArgumentError(f"{op}: margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(f"{op}: the anchor, positive and negative tensors must have the same "
                         f"number of dimensions, got shapes {tuple(anchor.shape)}, "
                         f"{tuple(positive.shape)} and {tuple(negative.shape)}")
    near = distance(anchor, positive)
    far = distance(anchor, negative)
    if swap:
        far = minimum(far, distance(positive, negative))
    return _reduce((near - far + margin).clamp(min=0), reduction)


@float32_under_autocast
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the p-norm distance; ``swap`` uses
    ``min(d(a, n), d(p, n))`` as the negative distance; ``margin`` must be positive.

    Example:
        >>> a = ember.tensor([[0.0, 0.0]])
        >>> F.triplet_margin_loss(a, a, ember.tensor([[3.0, 4.0]]))
        tensor(0.)
    """
    op = "triplet_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, anchor)
    return _triplet(op, anchor, positive, negative,
                    lambda x1, x2: pairwise_distance(x1, x2, p, eps), margin, swap, reduction)


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """The triplet loss ``max(0, d(a, p) - d(a, n) + margin)`` for any distance function
    ``d`` (``pairwise_distance`` by default); ``margin`` must be positive.

    Example:
        >>> a = ember.tensor([[0.0, 0.0]])
        >>> cos = lambda x, y: 1 - F.cosine_similarity(x, y)
        >>> F.triplet_margin_with_distance_loss(a + 1, a + 1, -a - 1, distance_function=cos)
        tensor(0.)
    """
    op = "triplet_margin_with_distance_loss"
    reduction = _reduction(op, None, None, reduction)
    return _triplet(op, anchor, positive, negative, distance_function or pairwise_distance,
                    margin, swap, reduction)


@float32_under_autocast
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss ``Σ_j Σ_{i ∉ y} max(0, 1 - (x[y_j] - x[i])) / C`` per sample,
    for logits (N, C) or (C,) and a same-shaped int64 ``target`` listing each sample's
    classes, ended by the first -1.

    Example:
        >>> F.multilabel_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]),
        ...                          ember.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    op = "multilabel_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    if target.dtype.name != "int64":
        raise DTypeError(f"{op}: target must hold int64 class indices, got {target.dtype.name}")
    if input.ndim > 2 or tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"{op}: expected an input of shape (C,) or (N, C) and a target of "
                         f"the same shape, got {tuple(input.shape)} and {tuple(target.shape)}")
    if 0 in input.shape[1:] or input.shape == (0,):  # (as PyTorch: no classes, no loss)
        raise ShapeError(f"{op}: expected a non-empty input of shape (C,) or (N, C), got "
                         f"{tuple(input.shape)}")
    c = input.shape[-1] if input.ndim else 1
    x, t = input.reshape((-1, c)), target.reshape((-1, c))
    valid = cumsum(cast(t == -1, t.dtype), 1) == 0  # the targets before the first -1
    picked = class_indices(t, c, op, ignore_index=-1)  # all checked, as PyTorch does
    is_target = ((picked.unsqueeze(2) == arange(c, device=input.device)) &
                 valid.unsqueeze(2)).any(1)  # (n, c): class i is one of the targets
    pairs = valid.unsqueeze(2) & ~is_target.unsqueeze(1)  # (n, j, i): target j, non-target i
    hinge = _hinge(1 - x.gather(1, picked).unsqueeze(2) + x.unsqueeze(1))
    # (selected, not scaled by 0: a pair of infinite logits is inf - inf = NaN)
    loss = where(pairs, hinge, 0.0).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def _hinge(z: Tensor) -> Tensor:
    """A margin loss's term: ``z`` where positive, else 0, as PyTorch's kernels add it (``if
    z > 0``): a NaN term (two infinite logits, a NaN logit) counts 0, and the kink at 0 has
    no gradient."""
    return where(z > 0, z, 0.0)
