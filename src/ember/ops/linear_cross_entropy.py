"""``linear_cross_entropy``: the cross entropy of ``linear(input, linear_weight, linear_bias)``
and a target, as ``torch.nn.functional.linear_cross_entropy``, with PyTorch's opt-in chunked
path that never holds the full ``(N, C)`` logits.

``options=None`` (the default) is the reference: ``linear`` then ``cross_entropy``, every
feature of both (class-probability targets, ``label_smoothing``, K-dimensional losses with
``linear_weight`` of shape ``(C, d_1, …, d_K, in_features)``). With
:class:`LinearCrossEntropyOptions` the batch is processed ``batch_chunk_size`` rows at a time
by one primitive: its forward keeps only each row's loss, and its backward recomputes each
chunk's logits (written in Ember ops, so it is differentiable again: unlike PyTorch's chunked
path, double backward and forward mode work). The extra memory is one chunk's logits; by
default a chunk has ``in_features`` rows, so a chunk's logits are as large as
``linear_weight``. As in PyTorch, what the chunked path does not cover (probability or
non-int64 targets, ``label_smoothing``, K-dimensional losses) falls back to the reference
with a warning.

Example:
    >>> x, w = ember.ones(4, 3), ember.zeros(5, 3)
    >>> F.linear_cross_entropy(x, w, ember.tensor([0, 1, 2, 3]))
    tensor(1.6094)
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ember import dtypes
from ember.errors import (
    ArgumentError,
    DTypeError,
    IndexOutOfRange,
    ShapeError,
    describe,
    dtype_name,
)
from ember.ops.creation import ones, zeros
from ember.ops.gather import one_hot
from ember.ops.int_args import as_int
from ember.ops.join import cat
from ember.ops.linear import linear
from ember.ops.loss import cross_entropy
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.softmax import softmax
from ember.tensor import Tensor

__all__: list[str] = []  # (nn.functional's and nn's, as in PyTorch)


@dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Turns on the chunked path of :func:`linear_cross_entropy`.

    ``batch_chunk_size`` rows are processed at a time (default: ``in_features``, so one
    chunk's logits are as large as ``linear_weight``). ``allow_retain_graph`` is accepted for
    PyTorch's signature: Ember's chunked backward keeps nothing to consume, so repeated
    backward always works. PyTorch's kernel choices ``chunking_method`` and ``acc_policy``
    and its ``acc_dtype`` have one value here (Ember has one strategy and accumulates in the
    input's dtype); other values are refused rather than ignored.

    Example:
        >>> opts = ember.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
        >>> F.linear_cross_entropy(ember.ones(4, 3), ember.zeros(5, 3),
        ...                        ember.tensor([0, 1, 2, 3]), options=opts)
        tensor(1.6094)
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: dtypes.DType | None = None

    def __post_init__(self) -> None:
        if self.batch_chunk_size is not None and self.batch_chunk_size < 1:
            raise ArgumentError(f"LinearCrossEntropyOptions: batch_chunk_size must be positive, "
                                f"got {self.batch_chunk_size}")
        for name, value, allowed in (("chunking_method", self.chunking_method, ("auto", None)),
                                     ("acc_policy", self.acc_policy, ("auto",)),
                                     ("acc_dtype", self.acc_dtype, (None,))):
            if value not in allowed:
                raise NotImplementedError(
                    f"LinearCrossEntropyOptions: {name}={value!r} selects one of PyTorch's "
                    f"kernels; Ember has one chunking strategy (batch_chunk_size rows at a "
                    f"time, accumulated in the input's dtype). Hint: leave {name} at its "
                    "default")


@primitive
class ChunkedLinearCrossEntropy(Primitive):
    """Each row's class-weighted cross entropy of ``x @ w.T + b`` (0 where the target is
    ``ignore_index``), ``chunk`` rows of logits at a time."""

    name = "linear_cross_entropy_rows"

    def forward(self, xp, x, w, b, target, class_weight, *, ignore_index, chunk):
        n, c = x.shape[0], w.shape[0]
        out = xp.empty((n,), dtype=x.dtype)
        for start in range(0, n, chunk):
            rows = slice(start, min(start + chunk, n))
            logits = x[rows] @ w.T + b
            top = logits.max(axis=1, keepdims=True)
            lse = xp.log(xp.exp(logits - top).sum(axis=1)) + top[:, 0]
            t = target[rows]
            valid = t != ignore_index
            bad = valid & ((t < 0) | (t >= c))
            if bad.any():
                raise IndexOutOfRange(f"linear_cross_entropy: target {int(t[bad][0])} is out of "
                                      f"bounds for {c} classes")
            t = xp.where(valid, t, 0)
            picked = xp.take_along_axis(logits, t[:, None], axis=1)[:, 0]
            out[rows] = xp.where(valid, (lse - picked) * class_weight[t], 0)
        return out

    def infer(self, x, w, b, target, class_weight, *, ignore_index, chunk):
        return TensorSpec((x.shape[0],), x.dtype)

    def _chunks(self, ctx):
        """Per chunk: its rows of ``x``, the softmax of its logits, the one-hot targets and
        each row's weight (0 for an ignored row), in Ember ops."""
        x, w, b, target, class_weight = ctx.inputs
        ignore_index, chunk = ctx.params["ignore_index"], ctx.params["chunk"]
        n, c = x.shape[0], w.shape[0]
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            xc, t = x.narrow(0, start, size), target.narrow(0, start, size)
            valid = t != ignore_index
            t = t * valid  # (an ignored row reads class 0, weighted by 0)
            probs = softmax(linear(xc, w, b), 1)
            row_weight = class_weight[t] * valid.to(x.dtype)
            yield start, size, xc, probs, one_hot(t, c).to(x.dtype), row_weight

    def vjp(self, ctx, g):
        x, w, b = ctx.inputs[:3]
        dx, dw, db = [], zeros(w.shape, dtype=w.dtype, device=w.device), None
        for start, size, xc, probs, hot, row_weight in self._chunks(ctx):
            dlogits = (probs - hot) * (g.narrow(0, start, size) * row_weight).unsqueeze(1)
            if x.requires_grad:
                dx.append(dlogits @ w)
            if w.requires_grad:
                dw = dw + dlogits.mT @ xc
            if b.requires_grad:
                db = dlogits.sum(0) if db is None else db + dlogits.sum(0)
        return (cat(dx) if dx else None, dw if w.requires_grad else None, db, None, None)

    def jvp(self, ctx, dx, dw, db, dtarget, dclass_weight):
        x, w = ctx.inputs[:2]
        pieces = []
        for start, size, xc, probs, hot, row_weight in self._chunks(ctx):
            dlogits = dx.narrow(0, start, size) @ w.mT + xc @ dw.mT + db
            pieces.append(((probs - hot) * dlogits).sum(1) * row_weight)
        return cat(pieces) if pieces else zeros((0,), dtype=x.dtype, device=x.device)


def _check(input: Tensor, linear_weight: Tensor, linear_bias: Tensor | None,
           weight: Tensor | None) -> tuple:
    op = "linear_cross_entropy"
    for name, other in (("linear_weight", linear_weight), ("linear_bias", linear_bias),
                        ("weight", weight)):
        if other is not None and other.dtype != input.dtype:
            raise DTypeError(f"{op}: {name} is {dtype_name(op, name, other)} but input is "
                             f"{dtype_name(op, 'input', input)}; they must match. Hint: convert "
                             "one with "
                             f".to({input.dtype.name})")
    if input.ndim not in (1, 2):
        raise ShapeError(f"{op}: expected input with dimensionality 1 or 2, got "
                         f"{describe(input.shape, input.dtype)}")
    if linear_weight.ndim < 2:
        raise ShapeError(f"{op}: expected linear_weight with dimensionality at least 2, got "
                         f"{describe(linear_weight.shape, linear_weight.dtype)}")
    in_features = input.shape[-1]
    if linear_weight.shape[-1] != in_features:
        raise ShapeError(f"{op}: expected equal input and linear_weight last dimensions "
                         f"(in_features), got {in_features} and {linear_weight.shape[-1]}")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise ShapeError(f"{op}: expected linear_bias shape {(num_classes, *out_features)}, got "
                         f"{tuple(linear_bias.shape)}")
    if weight is not None and tuple(weight.shape) != (num_classes,):
        raise ShapeError(f"{op}: weight tensor should be defined either for all {num_classes} "
                         f"classes or no classes, but got weight of shape "
                         f"{tuple(weight.shape)}")
    if out_features and input.ndim == 1:
        raise ShapeError(f"{op}: K-dimensional loss defined by linear_weight shape "
                         f"{tuple(linear_weight.shape)} requires batched input (N, "
                         f"{in_features}), got unbatched input with shape {tuple(input.shape)}")
    return num_classes, out_features


def _chunked(input: Tensor, linear_weight: Tensor, target: Tensor, linear_bias: Tensor | None,
             weight: Tensor | None, reduction: str, ignore_index: int,
             options: LinearCrossEntropyOptions) -> Tensor:
    batched = input.ndim == 2
    x, t = (input, target) if batched else (input.unsqueeze(0), target.reshape((1,)))
    c = linear_weight.shape[0]
    like = {"dtype": input.dtype, "device": input.device}
    b = zeros((c,), **like) if linear_bias is None else linear_bias
    class_weight = ones((c,), **like) if weight is None else weight
    chunk = options.batch_chunk_size or max(1, input.shape[-1])
    rows = apply(ChunkedLinearCrossEntropy, x, linear_weight, b, t, class_weight,
                 ignore_index=ignore_index, chunk=int(chunk))
    if reduction == "none":
        return rows if batched else rows.reshape(())
    if reduction == "sum":
        return rows.sum()
    valid = (t != ignore_index)
    return rows.sum() / (class_weight[t * valid] * valid.to(input.dtype)).sum()


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; with
    ``options`` computed in chunks of the batch, never holding the full logits.

    ``input`` is ``(in_features,)`` or ``(N, in_features)``; ``linear_weight``
    ``(C, in_features)`` or ``(C, d_1, …, d_K, in_features)`` for a K-dimensional loss;
    ``ignore_index=None`` means -100 for class-index targets and may not be given with
    class-probability targets.

    Example:
        >>> F.linear_cross_entropy(ember.ones(3), ember.zeros(4, 3), ember.tensor(1))
        tensor(1.3863)
    """
    op = "linear_cross_entropy"
    num_classes, out_features = _check(input, linear_weight, linear_bias, weight)
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise ArgumentError(f"{op}: ignore_index cannot be specified when target contains "
                            "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if type(ignore_index) is not int:
        ignore_index = as_int(ignore_index, op, "ignore_index")
    if options is not None:
        if reduction in ("mean", "sum", "none") and label_smoothing == 0.0 and \
                target.dtype is dtypes.int64 and not out_features and \
                tuple(target.shape) == tuple(input.shape[:-1]):
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, options)
        warnings.warn(f"{op}: ``options`` ignored; the chunked path needs reduction in "
                      f"{{'mean', 'sum', 'none'}}, label_smoothing == 0, int64 class-index "
                      f"targets and out_features == (). Got reduction={reduction!r}, "
                      f"label_smoothing={label_smoothing}, target dtype {target.dtype.name}, "
                      f"out_features={out_features}", stacklevel=2)
    rows = math.prod(out_features, start=num_classes)
    logits = linear(input, linear_weight.reshape((rows, input.shape[-1])),
                    None if linear_bias is None else linear_bias.reshape((rows,)))
    return cross_entropy(logits.reshape(logits_shape), target, weight=weight,
                         reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)
