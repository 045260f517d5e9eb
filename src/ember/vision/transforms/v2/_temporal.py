"""Temporal v2 transforms, on videos."""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError
from ember.vision import tv_tensors
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2.functional import is_pure_tensor

__all__ = ["UniformTemporalSubsample"]


class UniformTemporalSubsample(Transform):
    """Keeps ``num_samples`` frames evenly spaced over each video (and the pure tensor taken
    as the video); images, masks and boxes pass through.

    Example:
        >>> from ember.vision import tv_tensors
        >>> UniformTemporalSubsample(2)(tv_tensors.Video(ember.zeros(8, 3, 4, 4))).shape
        ember.Size([2, 3, 4, 4])
    """

    _transformed_types = (is_pure_tensor, tv_tensors.Video)

    def __init__(self, num_samples: int) -> None:
        super().__init__()
        if not isinstance(num_samples, int) or num_samples < 1:
            raise ArgumentError(f"UniformTemporalSubsample: num_samples should be a positive int, "
                                f"got {num_samples!r}")
        self.num_samples = num_samples

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)
