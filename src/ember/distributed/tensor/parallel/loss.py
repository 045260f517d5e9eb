"""``loss_parallel()`` (``torch.distributed.tensor.parallel.loss_parallel``): inside it,
``F.cross_entropy`` on logits sharded along the class dimension (``Shard(1)``, or ``Shard(0)``
for one sample of shape (C,); what ``ColwiseParallel(use_local_output=False)`` gives an
(N, C) output as ``Shard(-1)``) computes the loss without gathering the logits: each rank
works on its classes and the ranks exchange one number per sample (the softmax's max and
normalizer, the target's log-probability), then every rank holds the whole loss as a
``Replicate`` DTensor. Backward gives each rank its piece of the logits' gradient.

Outside ``loss_parallel`` a DTensor ``cross_entropy`` gathers the logits first (to
``Replicate``), as PyTorch's does. In both, a target (or ``weight``) given as an ordinary
tensor is taken as replicated (PyTorch's ``loss_parallel`` does so too); inside
``loss_parallel`` a DTensor one must be ``Replicate``.

Example (2 ranks):
    >>> logits = distribute_tensor(ember.randn(4, 6), mesh, [Shard(1)])
    >>> with loss_parallel():
    ...     loss = F.cross_entropy(logits, ember.tensor([0, 5, 2, 3]))
    >>> loss.placements, loss.shape
    ((Replicate(),), ember.Size([]))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ember.distributed.functional import ReduceFromGroup
from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.ops import compute, fill, no_rule, rule
from ember.distributed.tensor.placement import Replicate, Shard
from ember.distributed.tensor.redistribute import local_bounds
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.creation import full
from ember.ops.gather import class_indices, gather
from ember.ops.loss import cross_entropy
from ember.ops.primitive import apply
from ember.ops.reduce import amax
from ember.ops.select import where
from ember.tensor import Tensor

__all__ = ["loss_parallel"]

_depth = 0  # how many loss_parallel() contexts are open


@contextmanager
def loss_parallel() -> Iterator[None]:
    """Within it, ``F.cross_entropy`` on class-sharded DTensor logits runs without gathering
    them (see the module docstring); the logits must be ``Shard(1)`` (``Shard(0)`` if 1-d)
    on a 1-d mesh, the target class indices.

    Example (2 ranks):
        >>> with loss_parallel():
        ...     F.cross_entropy(distribute_tensor(ember.zeros(2, 4), mesh, [Shard(1)]),
        ...                     ember.tensor([1, 3])).full_tensor()
        tensor(1.3863)
    """
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


@rule(cross_entropy)
def _cross_entropy(op: Callable, input: Any, target: Any, weight: Any = None, *,
                   ignore_index: int = -100, reduction: str = "mean",
                   label_smoothing: float = 0.0) -> DTensor:
    if not isinstance(input, DTensor):
        raise no_rule("cross_entropy", [input, target], "the logits are not a DTensor")
    mesh = input.device_mesh
    target, weight = (_replicated(x, input) for x in (target, weight))
    class_dim = 1 if input.ndim >= 2 else 0
    if target.dtype.is_floating_point:
        probs = tuple(target.shape) == tuple(input.shape)
        out_shape = input.shape[:class_dim] + input.shape[class_dim + 1:] if probs else ()
    else:
        out_shape = target.shape
    if reduction != "none":
        out_shape = ()
    if not _depth:  # gathered, as PyTorch's cross_entropy does outside loss_parallel
        operands = [input, target, weight]
        found = [x for x in operands if isinstance(x, DTensor)]
        whole = [Replicate()] * mesh.ndim
        return compute(found, [whole] * len(found), whole, out_shape, lambda x, *rest: op(
            *fill(operands, (x, *rest)), ignore_index=ignore_index, reduction=reduction,
            label_smoothing=label_smoothing))
    if mesh.ndim != 1 or input.placements != (Shard(class_dim),):
        raise ArgumentError(f"loss_parallel: cross_entropy expects logits sharded along the class "
                            f"dimension {class_dim} on a 1-d mesh, got placements "
                            f"{input.placements} on {mesh}. Hint: ColwiseParallel(use_local_"
                            "output=False) gives Shard(-1)")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"cross_entropy: expected a floating input, got {input.dtype.name}")
    for name, x in (("target", target), ("weight", weight)):
        if isinstance(x, DTensor) and not all(p.is_replicate() for p in x.placements):
            raise RuntimeError(f"cross_entropy: loss_parallel takes the {name} replicated, got "
                               f"placements {x.placements}; expected {(Replicate(),)}. Hint: "
                               f"redistribute it to Replicate() or pass an ordinary tensor")
    if target.dtype.is_floating_point or target.dtype.name == "bool":
        raise no_rule("cross_entropy", [input, target], "loss_parallel takes class-index "
                      "targets (probability targets: compute outside loss_parallel)")
    expected = tuple(input.shape[:class_dim]) + tuple(input.shape[class_dim + 1:])
    if tuple(target.shape) != expected:
        raise ShapeError(f"cross_entropy: expected a target of shape {expected} for logits of "
                         f"shape {tuple(input.shape)}, got {tuple(target.shape)}")
    if weight is not None and tuple(weight.shape) != (input.shape[class_dim],):
        raise ShapeError(f"cross_entropy: weight has shape {tuple(weight.shape)} but there are "
                         f"{input.shape[class_dim]} classes; expected ({input.shape[class_dim]},)")
    lo, hi = local_bounds(input.shape[class_dim], class_dim, mesh, input.placements)
    weight = None if weight is None else weight.to_local().detach()
    loss = _sharded_loss(input._local_tensor, target.to_local(), weight, class_dim, (lo, hi),
                         input.shape[class_dim], mesh.get_group(0), ignore_index, reduction,
                         label_smoothing)
    return DTensor(loss, mesh, [Replicate()], out_shape)


def _replicated(x: Any, like: DTensor) -> Any:
    """An ordinary tensor taken as a ``Replicate`` DTensor on ``like``'s mesh."""
    if isinstance(x, Tensor):
        return DTensor.from_local(x, like.device_mesh, [Replicate()] * like.device_mesh.ndim)
    return x


def _sharded_loss(x: Tensor, target: Tensor, weight: Tensor | None, class_dim: int,
                  bounds: tuple[int, int], classes: int, group: Any, ignore_index: int,
                  reduction: str, label_smoothing: float) -> Tensor:
    """Cross entropy from this rank's classes ``bounds`` of the logits ``x``; the result
    (and its gradient) is the same on every rank."""
    lo, hi = bounds
    sum_over_ranks = lambda t: apply(ReduceFromGroup, t, op="sum", group=group)  # noqa: E731
    head = amax(x.detach(), class_dim, keepdim=True) if hi > lo else \
        full(x.sum(class_dim, keepdim=True).shape, float("-inf"), dtype=x.dtype)
    head = apply(ReduceFromGroup, head, op="max", group=group)  # a constant: no gradient
    shifted = x - head
    # every rank uses the reduced sums directly, so each one's gradient reaches its classes
    log_norm = sum_over_ranks(shifted.exp().sum(class_dim)).log()
    valid = target != ignore_index
    safe = class_indices(target, classes, "cross_entropy", ignore_index=ignore_index)
    mine = valid & (safe >= lo) & (safe < hi)
    index = where(mine, safe - lo, 0).unsqueeze(class_dim)
    picked = gather(shifted, class_dim, index).squeeze(class_dim) if hi > lo else \
        shifted.sum(class_dim)
    target_log_prob = sum_over_ranks(where(mine, picked, 0.0)) - log_norm
    scale = valid.to(x.dtype) if weight is None else where(valid, weight[safe], 0.0)
    loss = -target_log_prob * scale
    if label_smoothing > 0.0:
        w = None if weight is None else weight[lo:hi].view(
            [-1 if d == class_dim else 1 for d in range(x.ndim)])
        weighted = shifted if w is None else shifted * w
        total = classes if weight is None else weight.sum()
        smooth = (log_norm * total - sum_over_ranks(weighted.sum(class_dim))) * valid.to(x.dtype)
        loss = (1.0 - label_smoothing) * loss + label_smoothing / classes * smooth
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / scale.sum()
