"""The neural-network ops PyTorch also exposes at top level (``torch.dropout``,
``torch.batch_norm``, ``torch.embedding``, ``torch.kl_div``, …) with *those* signatures,
which follow PyTorch's ATen schemas rather than ``torch.nn.functional``'s: arguments in
another order (``embedding(weight, indices)``), all positional and required where ATen has no
default (``dropout(input, p, train)``), and losses taking ``reduction`` as the enum int
(0 none, 1 mean, 2 sum) whose default is 0: ATen's schemas say ``reduction=Mean``, but
PyTorch's Python bindings read that default as 0, so ``torch.kl_div(x, y)`` reduces nothing,
and neither does Ember's. Each one calls the op ``ember.nn.functional`` uses, so values and
gradients are the same.

Example:
    >>> x = ember.ones(2, 3)
    >>> ember.dropout(x, 0.5, False) is x
    True
    >>> ember.kl_div(ember.zeros(3), ember.ones(3), 2)
    tensor(0.)
"""

from __future__ import annotations

from collections.abc import Sequence

from ember.errors import ArgumentError, ShapeError
from ember.ops.binary_loss import binary_cross_entropy_with_logits as _bce_with_logits
from ember.ops.binary_loss import kl_div_reduced
from ember.ops.binary_loss import poisson_nll_loss as _poisson_nll_loss
from ember.ops.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from ember.ops.ctc_loss import ctc_loss as _ctc_loss
from ember.ops.dropout import alpha_dropout as _alpha_dropout
from ember.ops.dropout import channel_dropout
from ember.ops.dropout import dropout as _dropout
from ember.ops.dropout import feature_alpha_dropout as _feature_alpha_dropout
from ember.ops.embedding import embedding as _embedding
from ember.ops.margin_loss import cosine_embedding_loss as _cosine_embedding_loss
from ember.ops.margin_loss import hinge_embedding_loss as _hinge_embedding_loss
from ember.ops.margin_loss import margin_ranking_loss as _margin_ranking_loss
from ember.ops.margin_loss import triplet_margin_loss as _triplet_margin_loss
from ember.ops.normalization import _batch_norm, _instance_norm
from ember.ops.pad import pad as _pad
from ember.ops.pad import unsigned_wrapped
from ember.tensor import Tensor

__all__ = ["dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
           "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "batch_norm",
           "instance_norm", "embedding", "binary_cross_entropy_with_logits", "ctc_loss",
           "kl_div", "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "poisson_nll_loss", "triplet_margin_loss", "constant_pad_nd", "convolution"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op: str, reduction: int) -> str:
    """ATen's reduction enum as ``nn.functional``'s name."""
    if isinstance(reduction, bool) or reduction not in (0, 1, 2):
        raise ArgumentError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                            f"{reduction!r}. Hint: nn.functional.{op} takes the names")
    return _REDUCTIONS[reduction]


# -- dropout: (input, p, train) ------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.dropout(input, p, train)``; ``input`` itself when not ``train``.

    Example:
        >>> ember.dropout(ember.ones(2), 0.0, True)
        tensor([1., 1.])
    """
    return _dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`dropout` in place; returns ``input``.

    Example:
        >>> x = ember.ones(2); ember.dropout_(x, 1.0, True) is x, x
        (True, tensor([0., 0.]))
    """
    return _dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout(input, p, train)``.

    Example:
        >>> ember.alpha_dropout(ember.ones(2), 0.5, False)
        tensor([1., 1.])
    """
    return _alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`alpha_dropout` in place; returns ``input``.

    Example:
        >>> x = ember.ones(2); ember.alpha_dropout_(x, 0.5, False) is x
        True
    """
    return _alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zeroes whole channels: one draw per ``(N, C)`` entry of an ``(N, C, *)`` input, the
    kept ones scaled by ``1 / (1 - p)`` (what ``dropout1d/2d/3d`` do, for any rank ≥ 2).

    Example:
        >>> ember.feature_dropout(ember.ones(2, 3, 4), 0.5, True).shape
        ember.Size([2, 3, 4])
    """
    return channel_dropout(input, p, train, inplace=False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`feature_dropout` in place; returns ``input``.

    Example:
        >>> x = ember.ones(2, 3); ember.feature_dropout_(x, 1.0, True) is x, x.sum().item()
        (True, 0.0)
    """
    return channel_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.feature_alpha_dropout(input, p, train)``.

    Example:
        >>> ember.feature_alpha_dropout(ember.ones(2, 3), 0.5, True).shape
        ember.Size([2, 3])
    """
    return _feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`feature_alpha_dropout` in place; returns ``input``.

    Example:
        >>> x = ember.ones(2, 3); ember.feature_alpha_dropout_(x, 0.5, True) is x
        True
    """
    return _feature_alpha_dropout(input, p, train, inplace=True)


# -- normalization: ATen's argument order, cudnn_enabled accepted ----------------------------
def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``nn.functional.batch_norm`` with weight and bias before the running statistics, as
    ``torch.batch_norm`` takes them (``cudnn_enabled`` changes nothing); any ``eps``, as
    ``torch.batch_norm`` (only ``F.batch_norm`` refuses eps <= 0 in training).

    Example:
        >>> ember.batch_norm(ember.tensor([[1.0], [3.0]]), None, None, None, None, True, 0.1,
        ...                  0.0, False)
        tensor([[-1.],
                [ 1.]])
    """
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """``nn.functional.instance_norm`` in ``torch.instance_norm``'s argument order
    (``cudnn_enabled`` changes nothing).

    Example:
        >>> ember.instance_norm(ember.tensor([[[1.0, 3.0]]]), None, None, None, None, True,
        ...                     0.1, 0.0, False)
        tensor([[[-1.,  1.]]])
    """
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                          momentum, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of ``weight`` at ``indices`` (``weight`` first, as ``torch.embedding`` takes
    it; ``padding_idx=-1`` means none, and ``padding_idx``'s row gets no gradient).

    Example:
        >>> ember.embedding(ember.eye(3), ember.tensor([2, 0]))
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    return _embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                      scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# -- losses: the reduction as ATen's enum int ----------------------------------------------------
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 0) -> Tensor:
    """``nn.functional.binary_cross_entropy_with_logits`` with ``reduction`` 0/1/2.

    Example:
        >>> ember.binary_cross_entropy_with_logits(ember.zeros(2), ember.ones(2))
        tensor([0.6931, 0.6931])
    """
    return _bce_with_logits(input, target, weight,
                            reduction=_reduction("binary_cross_entropy_with_logits", reduction),
                            pos_weight=pos_weight)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False) -> Tensor:
    """``nn.functional.ctc_loss`` with ``reduction`` 0/1/2.

    Example:
        >>> lp = ember.full((2, 1, 2), 0.5).log()
        >>> ember.ctc_loss(lp, ember.tensor([[1]]), [2], [1], 0, 2)
        tensor(0.2877)
    """
    return _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                     _reduction("ctc_loss", reduction), zero_infinity)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """``nn.functional.kl_div`` with ``reduction`` 0/1/2 (no ``'batchmean'``, as in PyTorch).

    Example:
        >>> ember.kl_div(ember.zeros(2), ember.ones(2))
        tensor([0., 0.])
    """
    return kl_div_reduced(input, target, _reduction("kl_div", reduction), log_target)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """``nn.functional.cosine_embedding_loss`` with ``reduction`` 0/1/2.

    Example:
        >>> ember.cosine_embedding_loss(ember.ones(1, 2), ember.ones(1, 2), ember.ones(1))
        tensor([0.])
    """
    return _cosine_embedding_loss(input1, input2, target, margin,
                                  reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    """``nn.functional.hinge_embedding_loss`` with ``reduction`` 0/1/2.

    Example:
        >>> ember.hinge_embedding_loss(ember.tensor([0.5]), ember.tensor([-1.0]))
        tensor([0.5000])
    """
    return _hinge_embedding_loss(input, target, margin,
                                 reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """``nn.functional.margin_ranking_loss`` with ``reduction`` 0/1/2.

    Example:
        >>> ember.margin_ranking_loss(ember.tensor([1.0]), ember.tensor([2.0]), ember.ones(1))
        tensor([1.])
    """
    return _margin_ranking_loss(input1, input2, target, margin,
                                reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``nn.functional.poisson_nll_loss`` with every argument given and ``reduction`` 0/1/2.

    Example:
        >>> ember.poisson_nll_loss(ember.zeros(2), ember.zeros(2), True, False, 1e-8, 1)
        tensor(1.)
    """
    return _poisson_nll_loss(input, target, log_input, full, eps=eps,
                             reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 0) -> Tensor:
    """``nn.functional.triplet_margin_loss`` with ``reduction`` 0/1/2.

    Example:
        >>> a = ember.zeros(1, 2)
        >>> ember.triplet_margin_loss(a, a, a + 3.0)
        tensor([0.])
    """
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                reduction=_reduction("triplet_margin_loss", reduction))


# -- padding and convolution ---------------------------------------------------------------------
def constant_pad_nd(input: Tensor, pad: Sequence[int], value: complex = 0) -> Tensor:
    """``input`` padded with ``value``: ``pad`` lists (before, after) pairs from the last
    dimension backwards (negative amounts crop).

    Example:
        >>> ember.constant_pad_nd(ember.ones(2), (1, 2))
        tensor([0., 1., 1., 0., 0.])
    """
    return _pad(input, pad, "constant", unsigned_wrapped(input, value))

_CONVS = {1: (conv1d, conv_transpose1d), 2: (conv2d, conv_transpose2d),
          3: (conv3d, conv_transpose3d)}


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int], groups: int) -> Tensor:
    """The convolution (or, with ``transposed``, the transposed convolution) whose spatial
    rank is ``weight.ndim - 2``: one entry point for ``conv1d`` … ``conv_transpose3d``
    (``output_padding`` is read for transposed ones only, as in PyTorch).

    Example:
        >>> ember.convolution(ember.ones(1, 1, 3), ember.ones(1, 1, 2), None, [1], [0], [1],
        ...                   False, [0], 1)
        tensor([[[2., 2.]]])
    """
    rank = weight.ndim - 2
    if rank not in _CONVS:
        raise ArgumentError("convolution: expected a weight of 3, 4 or 5 dimensions (1-3 "
                            f"spatial), got shape {tuple(weight.shape)}")
    if input.ndim != weight.ndim:
        raise ShapeError(f"convolution: expected a {weight.ndim}-dimensional input (batched) "
                         f"for a weight of shape {tuple(weight.shape)}, got input of shape "
                         f"{tuple(input.shape)}. Hint: unsqueeze(0) adds the batch dimension")
    conv, conv_transpose = _CONVS[rank]
    if transposed:
        return conv_transpose(input, weight, bias, tuple(stride), tuple(padding),
                              tuple(output_padding), groups, tuple(dilation))
    return conv(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)
