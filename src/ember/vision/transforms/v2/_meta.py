"""Box format conversion, and box and key point clamping, as v2 transforms."""

from __future__ import annotations

from typing import Any

from ember.vision import tv_tensors
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.tv_tensors import BoundingBoxFormat
from ember.vision.tv_tensors._bounding_boxes import CLAMPING_MODES, _format, check_clamping_mode

__all__ = ["ClampBoundingBoxes", "ClampKeyPoints", "ConvertBoundingBoxFormat", "SetClampingMode"]


class ConvertBoundingBoxFormat(Transform):
    """Converts the sample's boxes to ``format``.

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([1, 2, 4, 6], format="XYXY", canvas_size=(8, 8))
        >>> ConvertBoundingBoxFormat("XYWH")(boxes).tolist()
        [[1, 2, 3, 4]]
    """

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, format: BoundingBoxFormat | str) -> None:
        super().__init__()
        self.format = _format(format)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(Transform):
    """Clamps the sample's boxes to their canvas in ``clamping_mode``: ``"auto"`` (each
    boxes' own mode), ``"soft"``, ``"hard"`` or ``None`` (no clamping).

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([-1, 2, 9, 6], format="XYXY", canvas_size=(8, 8))
        >>> ClampBoundingBoxes()(boxes).tolist()
        [[0, 2, 8, 6]]
    """

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode: str | None = "auto") -> None:
        super().__init__()
        self.clamping_mode = check_clamping_mode("ClampBoundingBoxes", clamping_mode,
                                                 ("auto", *CLAMPING_MODES))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


class SetClampingMode(Transform):
    """Sets the ``clamping_mode`` of the sample's boxes (``"soft"``, ``"hard"`` or ``None``)
    for the transforms after it.

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([-1, 2, 9, 6], format="XYXY", canvas_size=(8, 8))
        >>> SetClampingMode(None)(boxes).clamping_mode is None
        True
    """

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode: str | None) -> None:
        super().__init__()
        self.clamping_mode = check_clamping_mode("SetClampingMode", clamping_mode)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return tv_tensors.wrap(inpt.clone(), like=inpt, clamping_mode=self.clamping_mode)


class ClampKeyPoints(Transform):
    """Moves the sample's key points inside their canvas (``x`` to ``[0, width - 1]``, ``y``
    to ``[0, height - 1]``).

    Example:
        >>> from ember.vision import tv_tensors
        >>> k = tv_tensors.KeyPoints([[-1, 2], [9, 9]], canvas_size=(8, 8))
        >>> ClampKeyPoints()(k).tolist()
        [[0, 2], [7, 7]]
    """

    _transformed_types = (tv_tensors.KeyPoints,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.clamp_keypoints(inpt)
