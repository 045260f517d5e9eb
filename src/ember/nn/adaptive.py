"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016), with PyTorch's
parameters (``head``, ``tail.{i}.0``/``tail.{i}.1``), so state dicts load across.

The classes split at ``cutoffs`` into a frequent shortlist, scored by the head together with
one logit per tail cluster, and rarer clusters, each scored by its own low-rank projection
(``in_features // div_value**(i+1)`` wide). A class's log-probability is its head
log-probability, or its cluster's head log-probability plus its log-probability within the
cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import ember
from ember.errors import ArgumentError, DTypeError, IndexOutOfRange, ShapeError
from ember.nn import functional as F
from ember.nn.containers import ModuleList, Sequential
from ember.nn.linear import Linear
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    """What :class:`AdaptiveLogSoftmaxWithLoss` returns: each target's log-probability and
    their mean negative (PyTorch's ``_ASMoutput``)."""

    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """An efficient softmax approximation for many classes with a skewed frequency (sort the
    classes by frequency, most frequent first).

    ``forward(input, target)`` takes ``(N, in_features)`` and ``(N,)`` (or ``(in_features,)``
    and ``()``) and returns ``(output, loss)``: each target's log-probability and the mean
    negative log-likelihood. ``log_prob(input)`` gives all ``n_classes`` log-probabilities,
    ``predict(input)`` the most probable class.

    Example:
        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
        >>> out = asm(ember.randn(3, 8), ember.tensor([0, 5, 9]))
        >>> out.output.shape, out.loss.shape, asm.log_prob(ember.randn(3, 8)).shape
        (ember.Size([3]), ember.Size([]), ember.Size([3, 10]))
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ArgumentError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                                "length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ArgumentError(f"AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                                f"unique, positive integers sorted in an increasing order, where "
                                f"each value is between 1 and n_classes-1 = {n_classes - 1}, got "
                                f"{cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Draws the head's and the tails' weights afresh, as ``__init__`` does."""
        self.head.reset_parameters()
        for projection in self.tail:
            for linear in projection:
                linear.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        self._check(input, target)
        batched = target.ndim == 1
        if not batched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        batch = target.shape[0]
        output = ember.zeros(batch, dtype=input.dtype, device=input.device)
        head_index = target  # the head column each row reads: its class, or its cluster
        used = 0
        for i, (low, high) in enumerate(zip([0, *self.cutoffs], self.cutoffs)):
            rows = ((target >= low) & (target < high)).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            used += rows.numel()
            if i == 0:
                continue
            head_index = head_index.index_fill(0, rows, self.shortlist_size + i - 1)
            cluster = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            within = target.index_select(0, rows) - low
            output = output.index_copy(0, rows, cluster.gather(1, within.unsqueeze(1))[:, 0])
        if used != batch:
            raise IndexOutOfRange(f"AdaptiveLogSoftmaxWithLoss: target values should be in "
                                  f"[0, {self.n_classes - 1}], but values in range "
                                  f"[{target.min().item()}, {target.max().item()}] were found")
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, head_index.unsqueeze(1))[:, 0]
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _check(self, input: Tensor, target: Tensor) -> None:
        shapes = f"input {tuple(input.shape)} and target {tuple(target.shape)}"
        if target.ndim == 1:
            if input.ndim != 2 or input.shape[0] != target.shape[0]:
                raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: a 1-D target expects a 2-D input "
                                 f"with the same batch size, got {shapes}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: a 0-D target expects a 1-D "
                                 f"input, got {shapes}")
        else:
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: 0-D or 1-D target expected "
                             f"(multi-target is not supported), got {shapes}")
        if target.dtype not in (ember.int64, ember.int32):  # (PyTorch's gather refuses others)
            raise DTypeError(f"AdaptiveLogSoftmaxWithLoss: target must hold integer class "
                             f"indices as int64 or int32, got {target.dtype.name}")
        if input.shape[-1] != self.in_features:
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: expected {self.in_features} input "
                             f"features, got {shapes}")

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = self.shortlist_size + i
            parts.append(F.log_softmax(projection(input), dim=1) + head[:, cluster:cluster + 1])
        return ember.cat(parts, dim=1)

    def _check_batch(self, op: str, input: Tensor) -> None:
        if input.ndim != 2 or input.shape[1] != self.in_features:
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss.{op}: expected an (N, "
                             f"{self.in_features}) input, got shape {tuple(input.shape)}")

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probabilities of all ``n_classes`` classes, ``(N, n_classes)``.

        Example:
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[3])
            >>> asm.log_prob(ember.randn(2, 4)).exp().sum(1).allclose(ember.ones(2))
            True
        """
        self._check_batch("log_prob", input)
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row, ``(N,)``: ``log_prob(input).argmax(1)``,
        computing the tails only for rows whose head prefers a cluster.

        Example:
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[3])
            >>> x = ember.randn(5, 4)
            >>> bool((asm.predict(x) == asm.log_prob(x).argmax(1)).all())
            True
        """
        self._check_batch("predict", input)
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        in_tail = output >= self.shortlist_size
        if not bool(in_tail.any()):
            return output
        rows = in_tail.nonzero().reshape(-1)
        best = self._full_log_prob(input.index_select(0, rows),
                                   head_output.index_select(0, rows)).argmax(dim=1)
        return output.index_copy(0, rows, best)
