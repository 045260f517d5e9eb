"""Classification and regression losses with PyTorch's reductions ('mean' | 'sum' | 'none'):
cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss and huber_loss (the binary and
distribution losses are in :mod:`ember.ops.binary_loss`, margin and embedding losses in
:mod:`ember.ops.margin_loss`).

All but smooth_l1_loss and huber_loss (a primitive of their own: :mod:`ember.ops.smooth_l1`)
are composites (log_softmax, gather and elementwise ops), so their gradients come from
those rules; eagerly, cross_entropy and nll_loss of int64 class indices end in the fused
``nll_loss`` primitive (:mod:`ember.ops.nll`, measured 2-4x faster on small batches), which
computes what their composite does, bit for bit. Class weights and the ignore mask are
constants: as in PyTorch, no gradient flows to ``weight`` or ``target`` of the classification
losses.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import GRAD
from ember.autograd.graph import name_node
from ember.errors import (
    ArgumentError,
    DTypeError,
    GradError,
    ShapeError,
    dtype_name,
    is_floating_input,
    refuse_non_tensor,
    user_stacklevel,
)
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.convert import autocast_mix, cast, float32_under_autocast, promote
from ember.ops.gather import class_indices
from ember.ops.int_args import as_int
from ember.ops.nll import check_class_targets, nll
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import DISPATCH, apply
from ember.ops.select import where
from ember.ops.smooth_l1 import smooth_l1
from ember.ops.softmax import LogSoftmax
from ember.tensor import Tensor, _wrap

__all__: list[str] = []

_REDUCTIONS = ("mean", "sum", "none")
TAKEN_REDUCTIONS = (*_REDUCTIONS, "elementwise_mean")  # (and PyTorch's old name for "mean")


def _reduction(op: str, size_average: bool | None, reduce: bool | None,
               reduction: str) -> str:
    """The reduction, reading PyTorch's deprecated ``size_average``/``reduce`` if given (with
    its deprecation warning)."""
    if size_average is not None or reduce is not None:
        return legacy_reduction(size_average, reduce)
    # PyTorch's old name, taken with a warning by every loss (PyTorch 2.13 refuses it in
    # poisson_nll_loss, gaussian_nll_loss, multilabel_soft_margin_loss and
    # triplet_margin_with_distance_loss; Ember keeps one rule)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use "
                      "reduction='mean' instead.", UserWarning, stacklevel=user_stacklevel())
        return "mean"
    if reduction not in _REDUCTIONS and not (op == "kl_div" and reduction == "batchmean"):
        valid = _REDUCTIONS + (("batchmean",) if op == "kl_div" else ())
        raise ArgumentError(f"{op}: {reduction!r} is not a valid value for reduction; expected "
                            f"one of {', '.join(map(repr, valid))}")
    return reduction


def legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """The reduction that PyTorch's deprecated ``size_average``/``reduce`` pair (None meaning
    True) stands for, warning as PyTorch does that the pair is deprecated."""
    if reduce is False:
        reduction = "none"
    else:
        reduction = "sum" if size_average is False else "mean"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", UserWarning,
                  stacklevel=user_stacklevel())
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_float(op: str, x: Tensor, what: str = "input") -> None:
    if not is_floating_input(op, what, x):
        raise DTypeError(f"{op}: expected a floating {what}, got {x.dtype.name}")


def refuse_weight_grad(op: str, weight: Tensor | None) -> None:
    """Refuses class weights that require grad where the loss has no gradient for them (its
    class-index form), as PyTorch refuses them, rather than leaving ``weight.grad`` unset."""
    if weight is not None and GRAD.enabled and getattr(weight, "requires_grad", False):
        raise GradError(f"{op}: the loss is not differentiable with respect to weight (class "
                        "weights of class-index targets); this input cannot have "
                        "requires_grad=True. Hint: pass weight.detach()")


def weight_in(weight: Tensor | None, input: Tensor) -> Tensor | None:
    """Class weights in the input's dtype, the loss's (PyTorch refuses others; Ember casts)."""
    return cast(weight, input.dtype) if isinstance(weight, Tensor) else weight


def _constant(array: Any, like: Tensor) -> Tensor:
    return _wrap(like.device.xp.asarray(array), like.device)


# -- classification --------------------------------------------------------------------------
class _Targets:
    """Class-index targets read once: the mask of valid ones (not ``ignore_index``), the safe
    indices (ignored ones replaced by 0) and each element's weight (0 where ignored)."""

    __slots__ = ("valid", "safe", "weights")

    def __init__(self, op: str, input: Tensor, target: Tensor, weight: Tensor | None,
                 ignore_index: int) -> None:
        c = check_class_targets(op, input, target, weight)
        # as ops on the target tensor (not its array), so that transforms (vmap, jit) see
        # them; the class_index primitive checks the range where it runs
        self.valid = target != ignore_index
        self.safe = class_indices(target, c, op, ignore_index=ignore_index)
        valid = cast(self.valid, input.dtype)
        self.weights = valid if weight is None else weight.detach()[self.safe] * valid


def _fused_nll(op: str, input: Tensor, target: Tensor, weight: Tensor | None,
               ignore_index: int, reduction: str, smoothing: float = 0.0) -> Tensor | None:
    """The loss as the fused ``nll_loss`` primitive (:mod:`ember.ops.nll`), with
    cross_entropy's ``label_smoothing`` ``smoothing``, or None where the composite computes it:
    under a transform other than an observer (jit, vmap, forward mode and autocast know the
    composite's ops), for uint8 targets, weights of another dtype, or smoothing of a half
    precision input (the composite rounds each of its steps)."""
    if (DISPATCH.handler is not None and not DISPATCH.only_observers()) or \
            target.dtype is not dtypes.int64 or \
            (weight is not None and weight.dtype is not input.dtype) or \
            (smoothing and input.dtype not in (dtypes.float32, dtypes.float64)):
        return None
    check_class_targets(op, input, target, weight)
    return nll(input, target, weight, ignore_index=ignore_index, reduction=reduction, op=op,
               smoothing=smoothing)


def _class_dim(input: Tensor) -> int:
    return 1 if input.ndim >= 2 else 0


def _nll(op: str, input: Tensor, targets: _Targets, reduction: str) -> Tensor:
    dim = _class_dim(input)
    idx = targets.safe.unsqueeze(dim)
    picked = input.gather(dim, idx).squeeze(dim)
    # selected, not just weighted by 0: ignored targets get no gradient even when all are
    # ignored and 'mean' divides by zero (PyTorch's zeros, not 0 * inf = nan)
    loss = where(targets.valid, -(picked * targets.weights), 0.0)
    # PyTorch records nll_loss (cross_entropy's last op) as one node
    total = loss.sum() / targets.weights.sum() if reduction == "mean" else _reduce(loss, reduction)
    return name_node(total, "NllLossBackward0")


@float32_under_autocast
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices, given log-probabilities ``input`` of shape
    (N, C), (N, C, d1, …) or (C,).

    'mean' divides by the summed weights of the non-ignored targets, as PyTorch does.

    Example:
        >>> logp = F.log_softmax(ember.randn(4, 3), dim=1)
        >>> F.nll_loss(logp, ember.tensor([0, 2, 1, 0])).shape
        ember.Size([])
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    if type(ignore_index) is not int:
        ignore_index = as_int(ignore_index, "nll_loss", "ignore_index")
    _check_float("nll_loss", input)
    if input.ndim == 0:
        raise ShapeError("nll_loss: expected an input of shape (C,), (N, C) or (N, C, d1, …), "
                         "got a 0-d tensor")
    refuse_weight_grad("nll_loss", weight)
    weight = weight_in(weight, input)
    fused = _fused_nll("nll_loss", input, target, weight, ignore_index, reduction)
    if fused is not None:
        return fused
    targets = _Targets("nll_loss", input, target, weight, ignore_index)
    return _nll("nll_loss", input, targets, reduction)


@float32_under_autocast
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` (N, C, …) or (C,) and a target that is either
    class indices (N, …) or class probabilities shaped like ``input``.

    ``weight`` rescales classes, ``ignore_index`` skips targets (index targets only), and
    ``label_smoothing`` mixes the target with the uniform distribution.

    Example:
        >>> logits = ember.randn(4, 3, requires_grad=True)
        >>> loss = F.cross_entropy(logits, ember.tensor([0, 2, 1, 0]))
        >>> loss.backward()
    """
    op = "cross_entropy"
    reduction = _reduction(op, size_average, reduce, reduction)
    if type(ignore_index) is not int:
        ignore_index = as_int(ignore_index, op, "ignore_index")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if type(input) in TENSOR_LIKE:
        return handle(cross_entropy, (input, target, weight), {
            "ignore_index": ignore_index, "reduction": reduction,
            "label_smoothing": label_smoothing})
    _check_float(op, input)
    if input.ndim == 0:
        raise ShapeError(f"{op}: expected an input of shape (C,), (N, C) or (N, C, d1, …), got "
                         "a 0-d tensor")
    dim = _class_dim(input)
    c = input.shape[dim]
    # (the primitive itself: log_softmax's checks of a tensor, a float dtype and the dim have
    # passed above, ~1 µs a call)
    logp = apply(LogSoftmax, input, dim=dim)
    if not target.dtype.is_floating_point:
        refuse_weight_grad(op, weight)
        weight = weight_in(weight, input)  # (probability targets promote, as PyTorch's)
        fused = _fused_nll(op, logp, target, weight, ignore_index, reduction,
                           float(label_smoothing))
        if fused is not None:
            return fused
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"{op}: weight has shape {tuple(weight.shape)} but there are {c} "
                         f"classes; expected ({c},)")
    class_weight = None if weight is None else \
        weight.reshape((c,) + (1,) * (input.ndim - dim - 1))

    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ShapeError(f"{op}: probability targets must have the input's shape "
                             f"{tuple(input.shape)}, got {tuple(target.shape)}")
        if ignore_index >= 0:
            raise ArgumentError(f"{op}: ignore_index={ignore_index} is not supported for "
                                "probability (floating point) targets. Hint: zero the rows to "
                                "skip, or pass class indices")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        terms = logp * target
        if class_weight is not None:
            terms = terms * class_weight
        return _reduce(-terms.sum(dim), reduction)

    targets = _Targets(op, input, target, weight, ignore_index)
    loss = None if label_smoothing == 0 else \
        _fused_nll(op, logp, target, weight, ignore_index, reduction)
    if loss is None:
        loss = _nll(op, logp, targets, reduction)
    if label_smoothing == 0:
        return loss
    # the uniform part: every class's log-probability, weighted, for non-ignored targets
    spread = logp if class_weight is None else logp * class_weight
    smooth = where(targets.valid, -spread.sum(dim), 0.0)
    if reduction == "mean":
        smooth = smooth.sum() / targets.weights.sum()
    else:
        smooth = _reduce(smooth, reduction)
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / c)


# -- regression ------------------------------------------------------------------------------
def _pointwise(op: str, input: Tensor, target: Tensor, complex_ok: bool = False,
               bool_ok: bool = True) -> Tensor:
    """``input - target`` of :func:`_operands`."""
    input, target = _operands(op, input, target, complex_ok, bool_ok)
    return input - target


def _refuse_foreign(op: str, input: Any) -> None:
    """Refuses a PyTorch tensor or NumPy array as ``op``'s input by name (a PyTorch tensor's
    dtype passes the dtype checks, a NumPy array fails them with an AttributeError)."""
    if not isinstance(input, Tensor):
        refuse_non_tensor(op, "input", input)


def _operands(op: str, input: Tensor, target: Tensor, complex_ok: bool = False,
              bool_ok: bool = True) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` checked, to be broadcast as PyTorch does, with its warning
    when the shapes differ (a (N, 1) input against a (N,) target broadcasts to (N, N): rarely
    what was meant). A bool target counts as 0/1 in the input's dtype unless ``bool_ok`` is
    False (l1_loss's subtraction refuses it in PyTorch). An integer input promotes to a
    floating target's dtype, as in PyTorch."""
    _refuse_foreign(op, input)
    if not (complex_ok and input.dtype.is_complex) and not (
            isinstance(target, Tensor) and target.dtype.is_floating_point):
        _check_float(op, input)
    if bool_ok and isinstance(target, Tensor) and target.dtype == dtypes.bool_:
        target = cast(target, input.dtype)
    if isinstance(target, Tensor) and target.shape != input.shape:
        shape = broadcast_shapes(tuple(input.shape), tuple(target.shape), op=op)
        warnings.warn(f"{op}: the target's shape {tuple(target.shape)} differs from the "
                      f"input's {tuple(input.shape)}; they broadcast to {tuple(shape)}, which is "
                      f"likely wrong. Hint: give both the same shape",
                      stacklevel=user_stacklevel())
    return input, target


def _weighted(op: str, loss: Tensor, input: Tensor, weight: Tensor | None, reduction: str,
              weight_mean: bool = True) -> Tensor:
    """An elementwise ``weight`` (shaped like ``input``) applied before reducing; as in
    PyTorch, mse and l1 divide a weighted 'mean' by the weights' sum, huber by the count."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ArgumentError(f"{op}: weight of shape {tuple(weight.shape)} must have the input's "
                            f"shape {tuple(input.shape)}")
    loss = loss * weight
    if reduction == "mean" and weight_mean:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@float32_under_autocast
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target)²``, optionally weighted elementwise.

    Example:
        >>> F.mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 0.0]))
        tensor(2.5000)
    """
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    d = _pointwise("mse_loss", input, target)
    return name_node(_weighted("mse_loss", d * d, input, weight, reduction), "MseLossBackward0")


@float32_under_autocast
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|``, optionally weighted elementwise (real for
    complex input: the moduli of the differences).

    Example:
        >>> F.l1_loss(ember.tensor([1.0, -2.0]), ember.tensor([0.0, 0.0]))
        tensor(1.5000)
    """
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    d = _pointwise("l1_loss", input, target, complex_ok=True, bool_ok=False)
    return _weighted("l1_loss", d.abs(), input, weight, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5·d²/beta`` where ``|d| < beta``, else ``|d| - 0.5·beta`` (``d = input - target``);
    ``beta=0`` is the L1 loss.

    Example:
        >>> F.smooth_l1_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]))
        tensor(1.3125)
    """
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise ArgumentError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    x, t = _operands("smooth_l1_loss", input, target)
    if beta == 0 or _is_zero_in_float32(beta, x, t):  # (float32 and below compute in float32)
        return _reduce((x - t).abs(), reduction)  # (checked, and warned, once)
    return _smooth_l1(x, t, beta, False, reduction)


def _is_zero_in_float32(beta: float, x: Tensor, t: Any) -> bool:
    """Whether ``beta`` (below ~1.4e-45) is 0 in float32, where operands other than float64
    compute: the loss is then L1, as PyTorch's (its beta is 0 there too)."""
    return float(np.float32(beta)) == 0 and not any(
        isinstance(v, Tensor) and v.dtype is dtypes.float64 for v in (x, t))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5·d²`` where ``|d| < delta``, else ``delta·(|d| - 0.5·delta)``.

    Example:
        >>> F.huber_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]))
        tensor(1.3125)
    """
    reduction = _reduction("huber_loss", None, None, reduction)
    if delta <= 0:
        raise ArgumentError(f"huber_loss: delta must be positive, got {delta}")
    _refuse_foreign("huber_loss", input)
    target = _same_dtype("huber_loss", input, target, GRAD.enabled and input.requires_grad)
    x, t = _operands("huber_loss", input, target)
    loss = _smooth_l1(x, t, delta, True, "none" if weight is not None else reduction)
    if weight is None:
        return name_node(loss, "HuberLossBackward0")
    return _weighted("huber_loss", loss, input, weight, reduction, weight_mean=False)


def _smooth_l1(input: Tensor, target: Any, beta: float, huber: bool, reduction: str) -> Tensor:
    """The ``smooth_l1_loss`` primitive (:mod:`ember.ops.smooth_l1`) of the operands in their
    result dtype, broadcast to one shape."""
    x, t = promote(input, target)
    shape = broadcast_shapes(tuple(x.shape), tuple(t.shape))
    return smooth_l1(expand(x, shape), expand(t, shape), beta=beta, huber=huber,
                     reduction=reduction)


def _same_dtype(op: str, input: Tensor, target: Any, strict: bool = True) -> Any:
    """``target`` in the input's dtype (PyTorch computes these losses in it); ``strict``
    refuses another dtype, as PyTorch does (for huber_loss, in its backward). Under autocast
    a low-precision and a float32 operand pass as they are: autocast's float32 policy for
    these losses' primitives casts both, as PyTorch's CPU autocast does."""
    if not isinstance(target, Tensor) or target.dtype == input.dtype:
        return target
    if autocast_mix(input.dtype, target.dtype):
        return target
    if strict:
        raise DTypeError(f"{op}: Found dtype {dtype_name(op, 'target', target)} for the target "
                         f"but expected the input's {dtype_name(op, 'input', input)}. Hint: "
                         "target.to(input.dtype)")
    return cast(target, input.dtype)
