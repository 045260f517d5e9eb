"""Channel rearrangements: ``pixel_shuffle`` moves channel blocks into space (the
upsampling of ESPCN-style networks), ``pixel_unshuffle`` moves them back, ``channel_shuffle``
interleaves channel groups (ShuffleNet; also under PyTorch's kernel name
``native_channel_shuffle``); each is a reshape, a permute and a reshape. A channels-last
input (channels-last-3d too for ``channel_shuffle``) is rearranged in its (N, *spatial, C)
order, so the result is channels-last too, as PyTorch's."""

from __future__ import annotations

from ember.errors import ArgumentError, ShapeError
from ember.layouts import channels_last, format_of
from ember.ops.channels_last_view import channels_back, pixels_first
from ember.ops.int_args import as_int
from ember.tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _factor(op: str, name: str, value: int) -> int:
    """The shuffle's ``r``, checked positive."""
    r = as_int(value, op, name)
    if r <= 0:
        raise ArgumentError(f"{op}: {name} must be positive, got {r}")
    return r


def _fresh(out: Tensor, input: Tensor) -> Tensor:
    """``out``, or a copy of it where it is a view of ``input`` (a factor or group count that
    moves nothing): as PyTorch's, the result never shares the input's memory."""
    base = input if input._base is None else input._base
    return out.clone() if out._base is base else out


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(…, C·r², H, W) → (…, C, H·r, W·r).

    Example:
        >>> F.pixel_shuffle(ember.ones(1, 8, 2, 3), 2).shape
        ember.Size([1, 2, 4, 6])
    """
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: expected (…, C·r², H, W) with r={r}, got shape "
                         f"{tuple(input.shape)}")
    *lead, c, h, w = input.shape
    if format_of(input) is channels_last:
        x = input.permute(0, 2, 3, 1).reshape((lead[0], h, w, c // (r * r), r, r))
        x = x.permute(0, 1, 4, 2, 5, 3).reshape((lead[0], h * r, w * r, c // (r * r)))
        return _fresh(x.permute(0, 3, 1, 2), input)
    n = len(lead)
    x = input.reshape((*lead, c // (r * r), r, r, h, w))
    order = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
    return _fresh(x.permute(order).reshape((*lead, c // (r * r), h * r, w * r)), input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(…, C, H·r, W·r) → (…, C·r², H, W), the inverse of :func:`pixel_shuffle`.

    Example:
        >>> F.pixel_unshuffle(ember.ones(1, 2, 4, 6), 2).shape
        ember.Size([1, 8, 2, 3])
    """
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise ShapeError(f"pixel_unshuffle: expected (…, C, H·r, W·r) with r={r}, got shape "
                         f"{tuple(input.shape)}")
    *lead, c, h, w = input.shape
    if format_of(input) is channels_last:
        x = input.permute(0, 2, 3, 1).reshape((lead[0], h // r, r, w // r, r, c))
        x = x.permute(0, 1, 3, 5, 2, 4).reshape((lead[0], h // r, w // r, c * r * r))
        return _fresh(x.permute(0, 3, 1, 2), input)
    n = len(lead)
    x = input.reshape((*lead, c, h // r, r, w // r, r))
    order = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
    return _fresh(x.permute(order).reshape((*lead, c * r * r, h // r, w // r)), input)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleaves the ``groups`` channel groups of a (N, C, *) input: channel ``g·(C/g) + i``
    moves to ``i·groups + g``.

    Example:
        >>> F.channel_shuffle(ember.arange(6.0).reshape(1, 6, 1), 2).flatten()
        tensor([0., 3., 1., 4., 2., 5.])
    """
    g = as_int(groups, "channel_shuffle", "groups")
    if input.ndim < 3:
        raise ShapeError(f"channel_shuffle: expected a (N, C, *) input with more than 2 dims, "
                         f"got shape {tuple(input.shape)}")
    if g <= 0 or input.shape[1] % g:
        raise ShapeError(f"channel_shuffle: the {input.shape[1]} channels of shape "
                         f"{tuple(input.shape)} must split into groups={g} equal groups "
                         f"(a positive divisor of the channel count)")
    moved = pixels_first(input, (4, 5))
    if moved is not None:
        *lead, c = moved.shape
        x = moved.reshape((*lead, g, c // g)).transpose(-1, -2)
        return _fresh(channels_back(x.reshape(tuple(moved.shape))), input)
    n, c, *rest = input.shape
    x = input.reshape((n, g, c // g, *rest))
    return _fresh(x.transpose(1, 2).reshape(tuple(input.shape)), input)


# PyTorch's name for its kernel of the same op
native_channel_shuffle = channel_shuffle
