"""The kernels of PyTorch's ``SyncBatchNorm`` as top-level functions: per-rank statistics
(``batch_norm_stats``), their combination over ranks (``batch_norm_gather_stats`` and
``_with_counts``, which also update the running statistics), the normalisation
(``batch_norm_elemt``), the two halves of the backward (``batch_norm_backward_reduce``, whose
sums the ranks all-reduce, and ``batch_norm_backward_elemt``), and
``batch_norm_update_stats``.

PyTorch runs all but the last only on CUDA; here they are composites of Ember ops on every
device (and therefore differentiable). Channels are dimension 1 of an ``(N, C, *)`` input;
statistics are ``(C,)``, or ``(world, C)`` when gathered. ``invstd`` is
``1 / sqrt(var + eps)`` of the biased variance; running variances are updated with the
unbiased one, as ``F.batch_norm`` does.

Example:
    >>> x = ember.tensor([[1.0], [3.0]])
    >>> mean, invstd = ember.batch_norm_stats(x, 0.0)
    >>> ember.batch_norm_elemt(x, None, None, mean, invstd, 0.0)
    tensor([[-1.],
            [ 1.]])
"""

from __future__ import annotations

from ember.errors import ShapeError, describe, refuse_non_tensor
from ember.ops.creation import full, zeros
from ember.ops.normalization import _update_batch_stats, _update_running
from ember.tensor import Tensor

__all__ = ["batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
           "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
           "batch_norm_backward_elemt", "batch_norm_update_stats"]


def _dims(op: str, input: Tensor, grad_out: Tensor | None = None) -> tuple[int, ...]:
    """The reduced dims of ``op``'s (N, C, *) input; a NumPy array or PyTorch tensor as the
    input or ``grad_out`` refused (its own ``var``, ``to`` would run)."""
    if grad_out is not None and not isinstance(grad_out, Tensor):
        refuse_non_tensor(op, "grad_out", grad_out)
    if not isinstance(input, Tensor):
        refuse_non_tensor(op, "input", input)
    if input.ndim < 2:
        raise ShapeError(f"{op}: expected an (N, C, *) input, got "
                         f"{describe(input.shape, input.dtype)}")
    return (0, *range(2, input.ndim))


def _channels(t: Tensor, ndim: int) -> Tensor:
    return t.reshape((t.shape[0],) + (1,) * (ndim - 2))


def _mean_and_biased_var(op: str, input: Tensor) -> tuple[Tensor, Tensor]:
    dims = _dims(op, input)
    return input.mean(dims), input.var(dims, correction=0)


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(mean, invstd)`` per channel of this rank's ``input``.

    Example:
        >>> ember.batch_norm_stats(ember.tensor([[1.0], [3.0]]), 0.0)[1]
        tensor([1.])
    """
    mean, var = _mean_and_biased_var("batch_norm_stats", input)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor,
                     invstd: Tensor, eps: float) -> Tensor:
    """``(input - mean) · invstd · weight + bias`` per channel (``eps`` is unused: it is in
    ``invstd`` already, as in PyTorch).

    Example:
        >>> ember.batch_norm_elemt(ember.ones(2, 1), ember.tensor([2.0]), ember.tensor([1.0]),
        ...                        ember.zeros(1), ember.ones(1), 1e-5)
        tensor([[3.],
                [3.]])
    """
    _dims("batch_norm_elemt", input)
    out = (input - _channels(mean, input.ndim)) * _channels(invstd, input.ndim)
    if weight is not None:
        out = out * _channels(weight, input.ndim)
    return out if bias is None else out + _channels(bias, input.ndim)


def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor,
                                        running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float,
                                        eps: float, counts: Tensor) -> tuple[Tensor, Tensor]:
    """The global ``(mean, invstd)`` from every rank's ``mean`` and ``invstd`` (``(world, C)``)
    over ``counts[r]`` values per channel, updating the running statistics (``input`` only
    gives the dtype, as in PyTorch).

    Example:
        >>> mean, invstd = ember.batch_norm_gather_stats_with_counts(
        ...     ember.zeros(1, 1), ember.tensor([[0.0], [2.0]]), ember.tensor([[1.0], [1.0]]),
        ...     None, None, 0.1, 0.0, ember.tensor([1.0, 1.0]))
        >>> mean, invstd
        (tensor([1.]), tensor([0.7071]))
    """
    op = "batch_norm_gather_stats_with_counts"
    if mean.ndim != 2 or tuple(invstd.shape) != tuple(mean.shape) or \
            tuple(counts.shape) != (mean.shape[0],):
        raise ShapeError(f"{op}: expected mean and invstd of shape (world, C) and counts of "
                         f"shape (world,), got {tuple(mean.shape)}, {tuple(invstd.shape)} and "
                         f"{tuple(counts.shape)}")
    weights = counts.to(mean.dtype).unsqueeze(1)
    total = weights.sum()
    global_mean = (weights * mean).sum(0) / total
    local_var = invstd.pow(-2) - eps
    var = (weights * (local_var + (mean - global_mean).pow(2))).sum(0) / total
    count = int(total.item())
    _update_batch_stats(running_mean, running_var, global_mean, var, max(count, 2), momentum)
    return global_mean.to(input.dtype), (var + eps).rsqrt().to(input.dtype)


def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor,
                            running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float, eps: float, count: int) -> tuple[Tensor, Tensor]:
    """:func:`batch_norm_gather_stats_with_counts` with ``count`` values on every rank.

    Example:
        >>> ember.batch_norm_gather_stats(ember.zeros(1, 1), ember.tensor([[0.0], [2.0]]),
        ...                               ember.tensor([[1.0], [1.0]]), None, None, 0.1, 0.0,
        ...                               3)[0]
        tensor([1.])
    """
    counts = full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                               weight: Tensor | None, input_g: bool, weight_g: bool,
                               bias_g: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel of this rank: the sums
    of ``grad_out`` and of ``grad_out · (input - mean)`` (for the input gradient, when
    ``input_g``), ``sum_dy_xmu · invstd`` (when ``weight_g``) and ``sum_dy`` (when
    ``bias_g``); what is not asked for is an empty tensor.

    Example:
        >>> ember.batch_norm_backward_reduce(ember.ones(2, 1), ember.tensor([[1.0], [3.0]]),
        ...                                  ember.tensor([2.0]), ember.ones(1), None, True,
        ...                                  True, True)[:2]
        (tensor([2.]), tensor([0.]))
    """
    dims = _dims("batch_norm_backward_reduce", input, grad_out)
    sum_dy = grad_out.sum(dims)
    sum_dy_xmu = (grad_out * (input - _channels(mean, input.ndim))).sum(dims)
    empty = zeros((0,), dtype=grad_out.dtype, device=grad_out.device)
    return (sum_dy if input_g else empty, sum_dy_xmu if input_g else empty.clone(),
            sum_dy_xmu * invstd if weight_g else empty.clone(),
            sum_dy if bias_g else empty.clone())


def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                              weight: Tensor | None, sum_dy: Tensor, sum_dy_xmu: Tensor,
                              count: Tensor) -> Tensor:
    """The input gradient from the all-reduced ``sum_dy`` and ``sum_dy_xmu`` and every rank's
    element count per channel (``count``, summed):
    ``(dy - sum_dy/n - (x - mean) · invstd² · sum_dy_xmu/n) · invstd · weight``.

    Example:
        >>> ember.batch_norm_backward_elemt(ember.ones(2, 1), ember.zeros(2, 1), ember.zeros(1),
        ...                                 ember.ones(1), None, ember.tensor([2.0]),
        ...                                 ember.zeros(1), ember.tensor([2]))
        tensor([[0.],
                [0.]])
    """
    _dims("batch_norm_backward_elemt", input, grad_out)
    ndim = input.ndim
    n = count.sum().to(grad_out.dtype)
    centered = input - _channels(mean, ndim)
    scale = invstd if weight is None else invstd * weight
    return (grad_out - _channels(sum_dy / n, ndim)
            - centered * _channels(invstd.pow(2) * sum_dy_xmu / n, ndim)) * _channels(scale,
                                                                                      ndim)


def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None,
                            momentum: float) -> tuple[Tensor, Tensor]:
    """``(mean, var)`` per channel (biased variance), updating ``running_mean`` and
    ``running_var`` in place (with the unbiased variance), as in PyTorch.

    Example:
        >>> rm = ember.zeros(1)
        >>> ember.batch_norm_update_stats(ember.tensor([[1.0], [3.0]]), rm, None, 0.5)
        (tensor([2.]), tensor([1.]))
        >>> rm
        tensor([1.])
    """
    mean, var = _mean_and_biased_var("batch_norm_update_stats", input)
    count = input.numel() // max(input.shape[1], 1)
    _update_running(running_mean, mean, momentum, op="batch_norm_update_stats")
    _update_running(running_var, var, momentum, count / max(count - 1, 1),
                    op="batch_norm_update_stats")
    return mean, var
