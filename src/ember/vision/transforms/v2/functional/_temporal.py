"""Temporal ``v2.functional`` functions, on videos ``(..., T, C, H, W)``."""

from __future__ import annotations

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms.v2.functional._utils import _dispatch, _register_kernel_internal
from ember.vision.tv_tensors import Video

__all__ = ["uniform_temporal_subsample"]


def uniform_temporal_subsample(inpt: Tensor, num_samples: int) -> Tensor:
    """``num_samples`` frames evenly spaced over the video, first and last included
    (``linspace(0, T - 1, num_samples)`` truncated, as torchvision's).

    Example:
        >>> video = ember.arange(5.0).reshape(5, 1, 1, 1)
        >>> uniform_temporal_subsample(video, 3).flatten().tolist()
        [0.0, 2.0, 4.0]
    """
    return _dispatch(uniform_temporal_subsample, inpt, num_samples)


@_register_kernel_internal(uniform_temporal_subsample, Tensor, Video)
def _subsample_video(video: Tensor, num_samples: int) -> Tensor:
    if video.ndim < 4:
        raise ArgumentError(f"uniform_temporal_subsample: expected a video (..., T, C, H, W), got "
                            f"shape {tuple(video.shape)}")
    indices = ember.linspace(0, video.shape[-4] - 1, num_samples, dtype=ember.float64)
    return video.index_select(-4, indices.to(ember.int64))
