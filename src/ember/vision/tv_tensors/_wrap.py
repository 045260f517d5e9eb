"""``wrap``: a tensor under the type and metadata of a tv_tensor."""

from __future__ import annotations

from typing import Any

from ember.tensor import Tensor
from ember.vision.tv_tensors._tv_tensor import TVTensor


def wrap(wrappee: Tensor, *, like: TVTensor, **kwargs: Any) -> TVTensor:
    """``wrappee`` (no copy) as a tv_tensor of ``like``'s type, with ``like``'s metadata
    except what ``kwargs`` overrides (``format=``, ``canvas_size=`` for boxes).

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 2, 2], format="XYXY", canvas_size=(4, 4))
        >>> tv_tensors.wrap(boxes + 1, like=boxes, canvas_size=(5, 5)).canvas_size
        (5, 5)
    """
    if not isinstance(like, TVTensor):
        raise TypeError(f"wrap: like should be a tv_tensor, got {type(like).__name__}")
    unknown = set(kwargs) - set(like._metadata())
    if unknown:
        raise TypeError(f"wrap: {type(like).__name__} has no metadata {sorted(unknown)}")
    return type(like)._wrap(wrappee, **{**like._metadata(), **kwargs})
