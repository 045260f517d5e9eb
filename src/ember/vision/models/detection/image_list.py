"""``ImageList``: a padded batch of differently sized images and the size of each."""

from __future__ import annotations

from typing import Any

from ember.tensor import Tensor

__all__ = ["ImageList"]


class ImageList:
    """Images padded into one ``(N, C, H, W)`` tensor, with each image's ``(height, width)``
    before padding.

    Example:
        >>> ImageList(ember.zeros(2, 3, 32, 32), [(30, 32), (32, 20)]).image_sizes[1]
        (32, 20)
    """

    def __init__(self, tensors: Tensor, image_sizes: list[tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, *args: Any, **kwargs: Any) -> ImageList:
        return ImageList(self.tensors.to(*args, **kwargs), self.image_sizes)
