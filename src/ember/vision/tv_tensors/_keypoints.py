"""Key points: a tensor ``(..., 2)`` of ``(x, y)`` positions with the size of the canvas
(image) they lie on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.vision.tv_tensors._tv_tensor import TVTensor, _as_tensor


class KeyPoints(TVTensor):
    """Points ``(..., 2)`` as ``(x, y)`` pixel positions (a single point ``(2,)`` becomes
    ``(1, 2)``; ``(N, K, 2)`` holds K points of N objects) on a canvas of
    ``canvas_size = (height, width)``, as torchvision's ``KeyPoints``. Geometric transforms
    move them with the image; they are not clamped (see ``ClampKeyPoints``).

    Example:
        >>> from ember.vision.tv_tensors import KeyPoints
        >>> k = KeyPoints([[1, 2], [3, 4]], canvas_size=(8, 8))
        >>> k.shape, k.canvas_size
        (ember.Size([2, 2]), (8, 8))
    """

    canvas_size: tuple[int, int]

    def __new__(cls, data: Any, *, canvas_size: Sequence[int], dtype: ember.DType | None = None,
                device: Any = None, requires_grad: bool | None = None) -> KeyPoints:
        tensor = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim == 1:
            tensor = tensor.unsqueeze(0)
        if tensor.ndim == 0 or tensor.shape[-1] != 2:
            raise ArgumentError(f"KeyPoints: expected a tensor of shape (..., 2), got "
                                f"{tuple(tensor.shape)}")
        return cls._wrap(tensor, canvas_size=canvas_size)

    @classmethod
    def _wrap(cls, tensor: Any, *, canvas_size: Sequence[int]) -> KeyPoints:
        if not isinstance(canvas_size, Sequence) or len(canvas_size) != 2:
            raise ArgumentError(f"KeyPoints: canvas_size should be (height, width), got "
                                f"{canvas_size!r}")
        return super()._wrap(tensor, canvas_size=(int(canvas_size[0]), int(canvas_size[1])))
