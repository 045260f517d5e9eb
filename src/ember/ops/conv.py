"""Convolutions as im2col + GEMM: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``.

A convolution unfolds the input's windows into columns (``unfold``), multiplies them by the
weight in one matrix product (over the whole batch at once; batched over samples for
grouped convolutions), and reshapes; a transposed
convolution multiplies first and sums the columns back with ``fold``. Both are composites of
the ``unfold``/``fold`` primitives and ``matmul``, so gradients of every order come from their
rules: the weight gradient is a GEMM against the saved columns and the input gradient a GEMM
followed by ``fold``.
"""

from __future__ import annotations

from math import prod
from typing import Any

from ember.autograd.grad_mode import GRAD
from ember.autograd.graph import SAVED_HOOKS, saved_tensors_hooks
from ember.errors import DTypeError, GradError, ShapeError
from ember.ops.im2col import Pads, batched, fold_nd, ntuple, symmetric, unfold_nd, window_counts
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


def _check_operands(op: str, nd: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                    groups: int) -> None:
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype.name}. Hint: call "
                         ".float() on it")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype is not x.dtype and not DISPATCH.casting:
            raise DTypeError(f"{op}: input is {x.dtype.name} but {name} is {t.dtype.name}; "
                             f"they must match. Hint: convert one with .to()")
    if weight.ndim != nd + 2:
        raise ShapeError(f"{op}: expected a {nd + 2}-D weight, got shape "
                         f"{tuple(weight.shape)}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")


def _check_bias(op: str, bias: Tensor | None, channels: int) -> None:
    if bias is not None and tuple(bias.shape) != (channels,):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} given for {channels} output "
                         f"channels; expected shape ({channels},)")


def _conv_padding(op: str, padding: Any, kernel: tuple[int, ...], dilation: tuple[int, ...],
                  stride: tuple[int, ...]) -> Pads:
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(kernel)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided "
                                 f"convolutions (stride {stride})")
            # the odd element of the total goes to the high side, as PyTorch does
            return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for k, d in zip(kernel, dilation, strict=True))
        raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple, got "
                         f"{padding!r}")
    pad = ntuple(padding, len(kernel), op, "padding")
    if min(pad) < 0:
        raise ValueError(f"{op}: negative padding {pad} is not supported")
    return symmetric(pad)


def _add_bias(out: Tensor, bias: Tensor | None, nd: int) -> Tensor:
    if bias is None:
        return out
    if DISPATCH.casting and bias.dtype is not out.dtype:  # autocast: one low-precision GEMM
        bias = bias.to(out.dtype)
    return out + bias.reshape((bias.shape[0],) + (1,) * nd)


def _columns(x: Tensor, geometry: dict, op: str) -> Tensor:
    """im2col rows (N·L, ∏k·Cin) of ``x``."""
    cols = unfold_nd(x, op=op, layout="nlc", **geometry)
    return cols.reshape((cols.shape[0] * cols.shape[1], cols.shape[2]))


class _Recompute:
    """What the tape keeps instead of a convolution's columns: the input they came from."""

    __slots__ = ("x", "version")

    def __init__(self, x: Tensor) -> None:
        self.x, self.version = x, x._vc.value


def _recompute_hooks(cols: Tensor, x: Tensor, geometry: dict, op: str) -> tuple:
    """Saved-tensor hooks for the convolution's GEMM: its columns (∏k times the input's size,
    the largest activation of a CNN) are not kept for the weight gradient but made again
    from the input in backward, as PyTorch's convolution keeps only its input."""
    key = id(cols)  # (not cols itself: the hooks must not keep it alive)

    def pack(t: Tensor) -> Any:
        return _Recompute(x) if id(t) == key else t

    def unpack(saved: Any) -> Tensor:
        if type(saved) is not _Recompute:
            return saved
        if saved.x._vc.value != saved.version:
            raise GradError(f"backward of {op}: its input (shape {tuple(saved.x.shape)}) was "
                            f"modified in place after {op} used it; backward needs it. Hint: "
                            f"call .clone() on it before the in-place op")
        return _columns(saved.x, geometry, op)

    return pack, unpack


def _conv(op: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    x, added = batched(input, nd, op)
    _check_operands(op, nd, x, weight, bias, groups)
    n, cin = x.shape[:2]
    cout, per_group, kernel = weight.shape[0], weight.shape[1], tuple(weight.shape[2:])
    if cin != per_group * groups:
        grouping = f" ({groups} groups of {per_group})" if groups > 1 else ""
        raise ShapeError(f"{op}: input has {cin} channels but weight expects "
                         f"{per_group * groups}{grouping} (weight shape {tuple(weight.shape)})."
                         f" Hint: weight is (out_channels, in_channels / groups, *kernel)")
    if cout % groups:
        raise ShapeError(f"{op}: weight has {cout} output channels, not divisible by groups="
                         f"{groups} (weight shape {tuple(weight.shape)})")
    _check_bias(op, bias, cout)
    stride = ntuple(stride, nd, op, "stride")
    dilation = ntuple(dilation, nd, op, "dilation")
    pads = _conv_padding(op, padding, kernel, dilation, stride)
    counts = window_counts(tuple(x.shape[2:]), kernel, dilation, pads, stride, op)

    pointwise = all(k == 1 for k in kernel) and all(s == 1 for s in stride) and \
        all(p == (0, 0) for p in pads)
    length = prod(counts)
    if groups == 1:
        # columns (N·L, ∏k·Cin): one GEMM over the whole batch (a batch of small GEMMs runs far
        # below BLAS's rate on deep layers, where L is 16–64), its weight gradient one GEMM
        # too (not a batched product summed over N). Of the two orientations this is the one
        # OpenBLAS runs fastest in all three GEMMs (forward, weight and input gradients)
        if pointwise:
            cols = x.permute((0,) + tuple(range(2, 2 + nd)) + (1,)).reshape((n * length, cin))
            out = cols @ weight.reshape((cout, -1)).transpose(0, 1)
        else:
            geometry = {"kernel_size": kernel, "dilation": dilation, "padding": pads,
                        "stride": stride}
            cols = _columns(x, geometry, op)
            # the columns are ordered (*kernel, Cin): the weight's channels go last to match
            weight_t = weight.permute((0,) + tuple(range(2, 2 + nd)) + (1,)).reshape(
                (cout, -1)).transpose(0, 1)
            if GRAD.enabled and SAVED_HOOKS.top is None and \
                    (x.requires_grad or weight.requires_grad):
                with saved_tensors_hooks(*_recompute_hooks(cols, x, geometry, op)):
                    out = cols @ weight_t
            else:
                out = cols @ weight_t
        # (N, *counts, Cout) memory seen as (N, Cout, *counts), channels-last: elementwise ops
        # that follow keep that layout, and the next convolution's im2col reads any
        out = out.reshape((n,) + counts + (cout,)).permute((0, nd + 1) + tuple(range(1, nd + 1)))
    else:
        cols = x.reshape((n, cin, length)) if pointwise else \
            unfold_nd(x, kernel_size=kernel, dilation=dilation, padding=pads, stride=stride,
                      op=op)
        out = weight.reshape((groups, cout // groups, -1)) @ \
            cols.reshape((n, groups, cols.shape[1] // groups, cols.shape[2]))
        out = out.reshape((n, cout) + counts)
    out = _add_bias(out, bias, nd)
    return out.reshape(out.shape[1:]) if added else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of a (N, C_in, L) or (C_in, L) input with a
    (C_out, C_in / groups, k) weight.

    Example:
        >>> F.conv1d(ember.ones(1, 2, 5), ember.ones(3, 2, 3)).shape
        (1, 3, 3)
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation), as ``torch.nn.functional.conv2d``.

    ``input`` is (N, C_in, H, W) or (C_in, H, W); ``weight`` (C_out, C_in / groups, kh, kw);
    ``padding`` an int, a pair, ``"valid"`` or ``"same"`` (stride 1 only).

    Example:
        >>> x, w = ember.randn(2, 3, 5, 5), ember.randn(2, 3, 3, 3)
        >>> F.conv2d(x, w, padding=1).shape
        (2, 2, 5, 5)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of a (N, C_in, D, H, W) input with a (C_out, C_in / groups, kd, kh, kw)
    weight."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: Any, padding: Any, output_padding: Any, groups: int,
                    dilation: Any) -> Tensor:
    x, added = batched(input, nd, op)
    _check_operands(op, nd, x, weight, bias, groups)
    n, cin = x.shape[:2]
    kernel = tuple(weight.shape[2:])
    if weight.shape[0] != cin:
        raise ShapeError(f"{op}: input has {cin} channels but weight expects "
                         f"{weight.shape[0]} (weight shape {tuple(weight.shape)}). Hint: a "
                         f"transposed convolution's weight is (in_channels, out_channels / "
                         f"groups, *kernel)")
    if cin % groups:
        raise ShapeError(f"{op}: {cin} input channels are not divisible by groups={groups}")
    cout = weight.shape[1] * groups
    _check_bias(op, bias, cout)
    stride = ntuple(stride, nd, op, "stride")
    dilation = ntuple(dilation, nd, op, "dilation")
    pad = ntuple(padding, nd, op, "padding")
    extra = ntuple(output_padding, nd, op, "output_padding")
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation, strict=True)):
        raise ValueError(f"{op}: output_padding {extra} must be smaller than either stride "
                         f"{stride} or dilation {dilation}")
    spatial = tuple(x.shape[2:])
    size = tuple((s - 1) * st - 2 * p + d * (k - 1) + e + 1 for s, st, p, d, k, e in
                 zip(spatial, stride, pad, dilation, kernel, extra, strict=True))
    if min(size, default=1) <= 0:
        raise ShapeError(f"{op}: input of spatial size {spatial} gives an output of size "
                         f"{size}; reduce padding {pad}")
    length = prod(spatial)
    if groups == 1:
        cols = weight.reshape((cin, -1)).transpose(0, 1) @ x.reshape((n, cin, length))
    else:
        w = weight.reshape((groups, cin // groups, -1)).transpose(1, 2)
        cols = w @ x.reshape((n, groups, cin // groups, length))
    # output_padding extends the high side: the last windows stop short of the edge there
    pads = tuple((p, p - e) for p, e in zip(pad, extra, strict=True))
    out = fold_nd(cols.reshape((n, cout * prod(kernel), length)), size, kernel_size=kernel,
                  dilation=dilation, padding=pads, stride=stride)
    out = _add_bias(out, bias, nd)
    return out.reshape(out.shape[1:]) if added else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution of a (N, C_in, L) input with a (C_in, C_out / groups, k)
    weight (the gradient of conv1d with respect to its input)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution ("deconvolution"), as ``torch.nn.functional``'s.

    ``weight`` is (C_in, C_out / groups, kh, kw); the output size per dimension is
    ``(in - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1``.

    Example:
        >>> F.conv_transpose2d(ember.ones(1, 4, 3, 3), ember.ones(4, 2, 3, 3), stride=2).shape
        (1, 2, 7, 7)
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-D transposed convolution of a (N, C_in, D, H, W) input."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
