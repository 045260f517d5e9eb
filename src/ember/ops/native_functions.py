"""The rest of PyTorch's top-level NN ops with ATen's signatures (see functional_aliases.py for
the first part): the ``native_*`` norms and dropout, which also return what their backward
saves, ``grid_sampler`` (modes as ints), ``affine_grid_generator``, ``embedding_renorm_``
and ``conv_tbc`` (time, batch, channels); and, at top level as in PyTorch,
``nn.functional``'s ``max_pool1d_with_indices`` and ``bilinear``, whose signatures are ATen's.

Each output that ``nn.functional`` also computes comes from the same op, so values and
gradients are those of ``F.layer_norm``, ``F.batch_norm``, ``F.group_norm``,
``F.grid_sample``, ``F.affine_grid``, ``F.conv1d``. As in PyTorch, the
saved statistics of ``native_layer_norm`` and ``native_batch_norm`` and the mask of
``native_dropout`` carry no gradient; ``native_group_norm``'s do.

Example:
    >>> out, mean, rstd = ember.native_layer_norm(ember.tensor([[1.0, 3.0]]), [2], None, None,
    ...                                           1e-5)
    >>> mean
    tensor([[2.]])
"""

from __future__ import annotations

from collections.abc import Sequence

from ember import dtypes
from ember.errors import ArgumentError, ShapeError, describe, refuse_non_tensor
from ember.ops.conv import conv1d
from ember.ops.creation import full, ones, zeros
from ember.ops.dropout import _check as _check_dropout
from ember.ops.embedding import _renorm_
from ember.ops.forwarding import check_layer_operands
from ember.ops.grid_sample import affine_grid, grid_sample
from ember.ops.group_norm import group_norm
from ember.ops.layer_norm import layer_norm
from ember.ops.linalg import matmul
from ember.ops.linear import bilinear
from ember.ops.normalization import _batch_norm, checked_normalized_shape
from ember.ops.pool import max_pool1d_with_indices
from ember.ops.random import bernoulli, probability_dtype
from ember.ops.shape import narrow, permute
from ember.tensor import Tensor

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm", "native_dropout",
           "max_pool1d_with_indices", "bilinear", "grid_sampler", "grid_sampler_2d",
           "grid_sampler_3d", "affine_grid_generator", "embedding_renorm_", "conv_tbc"]


def _rstd(var: Tensor, eps: float) -> Tensor:
    return (var + eps).rsqrt()


# -- normalization with saved statistics -----------------------------------------------------
def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(F.layer_norm(...), mean, rstd)``: the mean and ``1/sqrt(var + eps)`` over the
    normalized dims, kept as size-1 dims (no gradient, as in PyTorch).

    Example:
        >>> _, _, rstd = ember.native_layer_norm(ember.tensor([[1.0, 3.0]]), [2], None, None,
        ...                                      0.0)
        >>> rstd
        tensor([[1.]])
    """
    shape = checked_normalized_shape("native_layer_norm", input, normalized_shape)
    out = layer_norm(input, shape, weight, bias, eps)
    x = input.detach()
    dims = tuple(range(-len(shape), 0))
    return out, x.mean(dims, keepdim=True), _rstd(x.var(dims, correction=0, keepdim=True), eps)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(F.batch_norm(...), save_mean, save_invstd)``: in training the batch's per-channel
    mean and ``1/sqrt(var + eps)`` (biased variance; running statistics updated as
    ``F.batch_norm`` does), in evaluation two empty tensors. No gradient for the two. Any
    ``eps`` is taken, as PyTorch's (only ``F.batch_norm`` refuses eps <= 0 in training).

    Example:
        >>> _, mean, _ = ember.native_batch_norm(ember.tensor([[1.0], [3.0]]), None, None,
        ...                                      None, None, True, 0.1, 1e-5)
        >>> mean
        tensor([2.])
    """
    out = _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = zeros((0,), dtype=input.dtype, device=input.device)
        return out, empty, empty.clone()
    x = input.detach()
    dims = (0,) + tuple(range(2, input.ndim))
    return out, x.mean(dims), _rstd(x.var(dims, correction=0), eps)


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int,  # noqa: N803
                      C: int, HxW: int, group: int,  # noqa: N803
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(F.group_norm(input, group, weight, bias, eps), mean, rstd)`` for an input of ``N``
    samples, ``C`` channels and ``HxW`` values per channel; ``mean`` and ``rstd`` are
    ``(N, group)`` and differentiable, as in PyTorch.

    Example:
        >>> _, mean, _ = ember.native_group_norm(ember.tensor([[1.0, 3.0]]), None, None, 1, 2,
        ...                                      1, 1, 1e-5)
        >>> mean
        tensor([[2.]])
    """
    op = "native_group_norm"
    if not isinstance(input, Tensor):  # (before its shape is judged)
        refuse_non_tensor(op, "input", input)
    if input.ndim < 2 or input.numel() != N * C * HxW or tuple(input.shape[:2]) != (N, C):
        raise ShapeError(f"{op}: input {describe(input.shape, input.dtype)} does not hold "
                         f"N={N} samples of C={C} channels with HxW={HxW} values each")
    out = group_norm(input, group, weight, bias, eps)
    grouped = input.reshape((N, group, (C // group) * HxW))
    return out, grouped.mean(2), _rstd(grouped.var(2, correction=0), eps)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """``(output, mask)``: each element kept (``mask`` True) with probability ``1 - p`` and
    scaled by ``1 / (1 - p)``; when ``train`` is False, a copy of ``input`` and an all-True
    mask. ``train=None`` means training, as in PyTorch.

    Example:
        >>> out, mask = ember.native_dropout(ember.ones(3), 0.5, False)
        >>> mask
        tensor([True, True, True])
    """
    _check_dropout("native_dropout", input, p, train is not False)
    if train is False:
        return input.clone(), ones(input.shape, dtype=dtypes.bool_, device=input.device)
    keep = full(input.shape, 1.0 - p, dtype=probability_dtype(input.dtype), device=input.device)
    mask = bernoulli(keep) > 0
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * mask.to(input.dtype) * scale, mask


# -- sampling --------------------------------------------------------------------------------
_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _mode(op: str, what: str, names: tuple[str, ...], value: int) -> str:
    if isinstance(value, bool) or value not in range(len(names)):
        raise ArgumentError(f"{op}: {what} must be one of "
                            f"{', '.join(f'{i} ({n})' for i, n in enumerate(names))}, got "
                            f"{value!r}. Hint: nn.functional.grid_sample takes the names")
    return names[value]


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``F.grid_sample`` with the modes as ATen's ints: interpolation 0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection.

    Example:
        >>> ember.grid_sampler(ember.ones(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 0, 0,
        ...                    False)
        tensor([[[[1.]]]])
    """
    return grid_sample(input, grid,
                       _mode("grid_sampler", "interpolation_mode", _INTERPOLATION,
                             interpolation_mode),
                       _mode("grid_sampler", "padding_mode", _PADDING, padding_mode),
                       align_corners)


def _grid_sampler_nd(nd: int, input: Tensor, grid: Tensor, interpolation_mode: int,
                     padding_mode: int, align_corners: bool) -> Tensor:
    op = f"grid_sampler_{nd}d"
    if input.ndim != nd + 2 or grid.ndim != nd + 2:
        refuse_non_tensor(op, "input", input)  # (a foreign array's shape is no matter)
        refuse_non_tensor(op, "grid", grid)
        raise ShapeError(f"{op}: expected {nd + 2}-D input and grid, got input "
                         f"{describe(input.shape, input.dtype)} and grid "
                         f"{describe(grid.shape, grid.dtype)}")
    if nd == 3 and interpolation_mode == 2:
        raise ArgumentError(f"{op}: bicubic interpolation only supports 4D input")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """:func:`grid_sampler` for a 4-D input only.

    Example:
        >>> ember.grid_sampler_2d(ember.ones(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 1, 0,
        ...                       True).shape
        ember.Size([1, 1, 1, 1])
    """
    return _grid_sampler_nd(2, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """:func:`grid_sampler` for a 5-D input only (no bicubic, as in PyTorch).

    Example:
        >>> ember.grid_sampler_3d(ember.ones(1, 1, 2, 2, 2), ember.zeros(1, 1, 1, 1, 3), 0, 0,
        ...                       False).shape
        ember.Size([1, 1, 1, 1, 1])
    """
    return _grid_sampler_nd(3, input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``F.affine_grid(theta, size, align_corners)``, ``align_corners`` required.

    Example:
        >>> ember.affine_grid_generator(ember.eye(2, 3).unsqueeze(0), [1, 1, 2, 2], True)[0, 0]
        tensor([[-1., -1.],
                [ 1., -1.]])
    """
    return affine_grid(theta, size, align_corners)


# -- embedding rows and time-major convolution -----------------------------------------------
def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """Rescales, in place and without gradient, the rows of the weight ``input`` that
    ``indices`` names whose ``norm_type``-norm exceeds ``max_norm`` (to ``max_norm``, as
    ``F.embedding(max_norm=...)`` does); returns ``input``.

    Example:
        >>> w = ember.tensor([[3.0, 4.0], [0.1, 0.0]])
        >>> ember.embedding_renorm_(w, ember.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.1000, 0.0000]])
    """
    _renorm_(input, indices, max_norm, norm_type)
    return input


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution of a time-major ``input`` (time, batch, in_channels) with ``weight``
    (kernel width, in_channels, out_channels) and ``bias`` (out_channels,), ``pad`` steps of
    zeros at both ends of time (a negative ``pad`` crops, as in PyTorch):
    (time + 2·pad - width + 1, batch, out_channels).

    Example:
        >>> ember.conv_tbc(ember.ones(4, 2, 3), ember.ones(2, 3, 5), ember.zeros(5), 1).shape
        ember.Size([5, 2, 5])
    """
    op = "conv_tbc"
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        check_layer_operands(op, input, weight, bias)  # (a foreign array's shape is no matter)
        raise ShapeError(f"{op}: expected a 3-D input (time, batch, channels), a 3-D weight "
                         f"(width, in, out) and a 1-D bias, got input "
                         f"{describe(input.shape, input.dtype)}, weight "
                         f"{describe(weight.shape, weight.dtype)} and bias "
                         f"{describe(bias.shape, bias.dtype)}")
    if input.shape[2] != weight.shape[1] or bias.shape[0] != weight.shape[2]:
        raise ShapeError(f"{op}: input has {input.shape[2]} channels and bias "
                         f"{bias.shape[0]}, but weight {tuple(weight.shape)} is (width, in, "
                         "out)")
    length = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if length < 0:
        raise ShapeError(f"{op}: input time {input.shape[0]} with pad={pad} and kernel width "
                         f"{weight.shape[0]} gives a negative output length {length}")
    if length == 0:  # no window fits (conv1d refuses that): empty, still on the graph
        return matmul(narrow(input, 0, 0, 0), weight[0]) + bias
    if pad < 0:  # (PyTorch crops the time axis)
        input, pad = narrow(input, 0, -pad, input.shape[0] + 2 * pad), 0
    out = conv1d(permute(input, (1, 2, 0)), permute(weight, (2, 1, 0)), bias, padding=pad)
    return permute(out, (2, 0, 1))
