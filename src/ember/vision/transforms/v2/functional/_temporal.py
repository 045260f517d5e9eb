"""Temporal ``v2.functional`` functions, on videos ``(..., T, C, H, W)``."""

from __future__ import annotations

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms.v2.functional._utils import _dispatch, _register_kernel_internal
from ember.vision.tv_tensors import Video

__all__ = ["get_num_frames", "uniform_temporal_subsample"]


def get_num_frames(inpt: Tensor) -> int:
    """The number of frames ``T`` of a video (or a pure tensor) ``(..., T, C, H, W)``.

    Example:
        >>> get_num_frames(ember.zeros(8, 3, 4, 4))
        8
    """
    return _dispatch(get_num_frames, inpt)


def _check_video(op: str, video: Tensor) -> None:
    if video.ndim < 4:
        raise ArgumentError(f"{op}: expected a video (..., T, C, H, W), got shape "
                            f"{tuple(video.shape)}")


@_register_kernel_internal(get_num_frames, Tensor, Video, tv_tensor_wrapper=False)
def _num_frames_video(video: Tensor) -> int:
    _check_video("get_num_frames", video)
    return video.shape[-4]


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
    _check_video("uniform_temporal_subsample", video)
    indices = ember.linspace(0, video.shape[-4] - 1, num_samples, dtype=ember.float64)
    return video.index_select(-4, indices.to(ember.int64))
