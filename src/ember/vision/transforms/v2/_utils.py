"""What the v2 transforms share: finding inputs of a type in a flattened sample, the sample's
size, fill values per type, and where the labels are."""

from __future__ import annotations

import collections.abc
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, type_name
from ember.vision import tv_tensors
from ember.vision.transforms._pil import is_pil_image
from ember.vision.transforms.v2.functional import get_dimensions, get_size, is_pure_tensor
from ember.vision.transforms.v2.functional._geometry import Fill

TypeCheck = type | Callable[[Any], bool]


def is_array_image(inpt: Any) -> bool:
    """A NumPy array or a PIL image (anything with ``__array_interface__`` but no tensor): the
    images before ``ToImage``, which play the part PIL images play in torchvision."""
    return isinstance(inpt, np.ndarray) or is_pil_image(inpt)


def check_type(obj: Any, types_or_checks: tuple[TypeCheck, ...]) -> bool:
    """Whether ``obj`` is an instance of one of the types or passes one of the checks."""
    return any(isinstance(obj, t) if isinstance(t, type) else t(obj) for t in types_or_checks)


def has_any(flat_inputs: list, *types_or_checks: TypeCheck) -> bool:
    return any(check_type(inpt, types_or_checks) for inpt in flat_inputs)


def has_all(flat_inputs: list, *types_or_checks: TypeCheck) -> bool:
    return all(has_any(flat_inputs, t) for t in types_or_checks)


def _first(flat_inputs: list, cls: type, what: str) -> Any:
    for inpt in flat_inputs:
        if isinstance(inpt, cls):
            return inpt
    raise ArgumentError(f"No {what} were found in the sample")


def get_bounding_boxes(flat_inputs: list) -> tv_tensors.BoundingBoxes:
    """The sample's (first) ``BoundingBoxes``."""
    return _first(flat_inputs, tv_tensors.BoundingBoxes, "bounding boxes")


def get_keypoints(flat_inputs: list) -> tv_tensors.KeyPoints:
    """The sample's (first) ``KeyPoints``.

    Example:
        >>> points = tv_tensors.KeyPoints([[1, 2]], canvas_size=(4, 4))
        >>> get_keypoints([ember.zeros(3, 4, 4), points]) is points
        True
    """
    return _first(flat_inputs, tv_tensors.KeyPoints, "keypoints")


def _one(op: str, found: set[tuple[int, ...]], what: str, kinds: str) -> tuple[int, ...]:
    if not found:
        raise TypeError(f"{op}: no {kinds} was found in the sample")
    if len(found) > 1:
        raise ArgumentError(f"{op}: found multiple {what} in the sample: {sorted(found)}")
    return found.pop()


def query_size(flat_inputs: list) -> tuple[int, int]:
    """The common ``(height, width)`` of the images, videos, masks and the canvases of boxes
    and key points."""
    found = {tuple(get_size(inpt)) for inpt in flat_inputs
             if check_type(inpt, (is_pure_tensor, is_array_image, tv_tensors.Image,
                                  tv_tensors.Video, tv_tensors.Mask, tv_tensors.BoundingBoxes,
                                  tv_tensors.KeyPoints))}
    return _one("query_size", found, "HxW dimensions",
                "image, video, mask, bounding box or key point")


def query_chw(flat_inputs: list) -> tuple[int, int, int]:
    """The common ``(channels, height, width)`` of the images and videos."""
    found = {tuple(get_dimensions(inpt)) for inpt in flat_inputs
             if check_type(inpt, (is_pure_tensor, is_array_image, tv_tensors.Image,
                                    tv_tensors.Video))}
    return _one("query_chw", found, "CxHxW dimensions", "image or video")


def _number_pair(value: float | Sequence[float], name: str, owner: str) -> list[float]:
    """torchvision v2's ``alpha``/``sigma`` forms: a number, or a sequence of one or two
    numbers, as ``[first, second]`` floats (one number stands for both)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Sequence)):
        raise ArgumentTypeError(f"{owner}: {name} should be a number or a sequence of numbers, "
                                f"got {type_name(value)}")
    if isinstance(value, numbers.Real):
        return [float(value)] * 2
    if len(value) not in (1, 2) or not all(isinstance(v, numbers.Real) and
                                           not isinstance(v, bool) for v in value):
        raise ArgumentError(f"{owner}: {name} should be a number or a sequence of 1 or 2 "
                            f"numbers, got {value!r}")
    return [float(value[0]), float(value[-1])]


def _setup_fill_arg(fill: Fill | dict) -> dict:
    """``fill`` as a dict from input type (or ``"others"``) to its fill."""
    if isinstance(fill, dict):
        for value in fill.values():
            _check_fill(value)
        return dict(fill)
    _check_fill(fill)
    return {"others": fill}


def _check_fill(fill: Any) -> None:
    if fill is None or isinstance(fill, numbers.Number):
        return
    if not (isinstance(fill, Sequence) and all(isinstance(v, numbers.Number) for v in fill)):
        raise TypeError(f"fill should be a number, a sequence of numbers, a dict of them per "
                        f"input type, or None; got {fill!r}")


def _get_fill(fill_dict: dict, input_type: type) -> Fill:
    return fill_dict.get(input_type, fill_dict.get("others"))


def _find_labels_default_heuristic(inputs: Any) -> Any:
    """torchvision's default ``labels_getter``: the second item of a tuple/list sample if it
    is a tensor (batched classification), else the ``"labels"`` entry (any case; then any key
    containing "label") of the dict that is the sample or its second item."""
    if isinstance(inputs, (tuple, list)):
        if len(inputs) < 2:
            raise ArgumentError("the default labels_getter expects the labels as the second item "
                                f"of a tuple or list sample, got {len(inputs)} item(s)")
        inputs = inputs[1]
    if is_pure_tensor(inputs):
        return inputs
    if not isinstance(inputs, collections.abc.Mapping):
        raise ArgumentError("When using the default labels_getter, the input passed to forward "
                            "must be a dictionary or a two-tuple whose second item is a "
                            f"dictionary or a tensor, but got {type(inputs).__name__} instead")
    keys = list(inputs)
    key = next((k for k in keys if isinstance(k, str) and k.lower() == "labels"), None)
    if key is None:
        key = next((k for k in keys if isinstance(k, str) and "label" in k.lower()), None)
    if key is None:
        raise ArgumentError("Could not infer where the labels are in the sample. Try passing a "
                            "callable as the labels_getter parameter? If there are no labels in "
                            "the sample by design, pass labels_getter=None.")
    return inputs[key]


def _parse_labels_getter(labels_getter: str | Callable | None) -> Callable[[Any], Any]:
    if labels_getter == "default":
        return _find_labels_default_heuristic
    if callable(labels_getter):
        return labels_getter
    if labels_getter is None:
        return lambda _: None
    raise ArgumentError(f"labels_getter should either be 'default', a callable, or None, but got "
                        f"{labels_getter!r}")

