"""Normalizing, blurring, noise, linear maps, dtype conversion, user functions and the
removal of degenerate boxes, as v2 transforms."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.vision import tv_tensors
from ember.vision.transforms import augment as v1
from ember.vision.transforms.basic import LinearTransformation as _V1Linear
from ember.vision.transforms.basic import _size_pair
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2._utils import (
    _number_pair,
    _parse_labels_getter,
    check_type,
    get_bounding_boxes,
    get_keypoints,
    is_array_image,
)
from ember.vision.transforms.v2.functional import is_pure_tensor

__all__ = ["ConvertImageDtype", "GaussianBlur", "GaussianNoise", "Identity", "Lambda",
           "LinearTransformation", "Normalize", "SanitizeBoundingBoxes", "SanitizeKeyPoints",
           "ToDtype"]


class Normalize(Transform):
    """``(x - mean) / std`` per channel of float images and videos.

    Example:
        >>> Normalize([0.5], [0.25])(ember.ones(1, 1, 2))
        tensor([[[2., 2.]]])
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float],
                 inplace: bool = False) -> None:
        super().__init__()
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if is_array_image(inpt):
            raise TypeError("Normalize() does not support array images; apply ToImage() and "
                            "ToDtype(ember.float32, scale=True) first")
        return self._call_kernel(F.normalize, inpt, self.mean, self.std, self.inplace)


class GaussianBlur(Transform):
    """A Gaussian blur with ``sigma`` drawn uniformly from ``sigma = (min, max)``.

    Example:
        >>> GaussianBlur(3, (0.1, 2.0))(ember.rand(3, 5, 5)).shape
        ember.Size([3, 5, 5])
    """

    def __init__(self, kernel_size: int | Sequence[int],
                 sigma: float | Sequence[float] = (0.1, 2.0)) -> None:
        super().__init__()
        self.kernel_size = _size_pair(kernel_size, "GaussianBlur")
        if any(k <= 0 or k % 2 == 0 for k in self.kernel_size):
            raise ArgumentError(f"GaussianBlur: kernel size value should be an odd and positive "
                                f"number, got {kernel_size}")
        self.sigma = _number_pair(sigma, "sigma", "GaussianBlur")
        if not 0 < self.sigma[0] <= self.sigma[1]:
            raise ArgumentError(f"GaussianBlur: sigma values should be positive and of the form "
                                f"(min, max), got {sigma}")

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        sigma = v1.GaussianBlur.get_params(self.sigma[0], self.sigma[1])  # (v1's draw)
        return {"sigma": [sigma, sigma]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.gaussian_blur, inpt, list(self.kernel_size),
                                 params["sigma"])


class GaussianNoise(Transform):
    """Adds Gaussian noise of ``mean`` and ``sigma`` to float images and videos, clamped to
    ``[0, 1]`` with ``clip`` (uint8 ones take it scaled by 255, as ``gaussian_noise``).

    Example:
        >>> GaussianNoise(sigma=0.0)(ember.full((1, 1, 2), 0.5)).tolist()
        [[[0.5, 0.5]]]
    """

    def __init__(self, mean: float = 0.0, sigma: float = 0.1, clip: bool = True) -> None:
        super().__init__()
        self.mean, self.sigma, self.clip = mean, sigma, clip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.gaussian_noise, inpt, mean=self.mean, sigma=self.sigma,
                                 clip=self.clip)


class Identity(Transform):
    """Gives the sample back unchanged.

    Example:
        >>> Identity()((ember.ones(1), 3))
        (tensor([1.]), 3)
    """

    def forward(self, *inputs: Any) -> Any:
        return inputs if len(inputs) > 1 else inputs[0]


class LinearTransformation(Transform):
    """v1's :class:`~ember.vision.transforms.LinearTransformation` (flatten, subtract
    ``mean_vector``, multiply by ``transformation_matrix``: a ZCA whitening, say) on images
    and videos.

    Example:
        >>> LinearTransformation(2 * ember.eye(4), ember.zeros(4))(ember.ones(1, 2, 2)).tolist()
        [[[2.0, 2.0], [2.0, 2.0]]]
    """

    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor) -> None:
        super().__init__()
        self._linear = _V1Linear(transformation_matrix, mean_vector)
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def _check_inputs(self, flat_inputs: list) -> None:
        if any(is_array_image(x) for x in flat_inputs):
            raise TypeError("LinearTransformation() does not support array or PIL images; "
                            "apply ToImage() and ToDtype(ember.float32, scale=True) first")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        out = self._linear(F.to_pure_tensor(inpt))
        return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else out


class ConvertImageDtype(Transform):
    """``ToDtype(dtype, scale=True)`` for images and videos (the v1 name).

    Example:
        >>> ConvertImageDtype(ember.float32)(ember.tensor([[[0, 255]]], dtype=ember.uint8))
        tensor([[[0., 1.]]])
    """

    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, dtype: ember.DType = ember.float32) -> None:
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.to_dtype, inpt, dtype=self.dtype, scale=True)


class ToDtype(Transform):
    """Converts to ``dtype``: one dtype converts images and videos (and the pure tensor taken
    as the image) only; a dict maps input types (and ``"others"``) to dtypes, ``None`` passing
    that type through. ``scale`` rescales image values between the dtypes' ranges.

    Example:
        >>> from ember.vision import tv_tensors
        >>> img = tv_tensors.Image(ember.full((1, 1, 1), 255, dtype=ember.uint8))
        >>> mask = tv_tensors.Mask(ember.zeros(1, 1, dtype=ember.uint8))
        >>> out = ToDtype({tv_tensors.Image: ember.float32, "others": ember.int64},
        ...               scale=True)(img, mask)
        >>> out[0].tolist(), out[1].dtype
        ([[[1.0]]], ember.int64)
    """

    def __init__(self, dtype: ember.DType | dict, scale: bool = False) -> None:
        super().__init__()
        if not isinstance(dtype, (ember.DType, dict)):
            raise ArgumentError(f"ToDtype: dtype must be a dtype or a dict of them per input type, "
                                f"got {dtype!r}")
        if isinstance(dtype, dict) and Tensor in dtype and any(
                t in dtype for t in (tv_tensors.Image, tv_tensors.Video)):
            warnings.warn("ToDtype: got a dtype for ember.Tensor and for Image or Video; the "
                          "pure tensors are then passed through (an Image or Video in the "
                          "sample is the image)", stacklevel=2)
        self.dtype, self.scale = dtype, scale

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        is_image = is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))
        if isinstance(self.dtype, ember.DType):
            if not is_image:
                return inpt
            dtype = self.dtype
        elif type(inpt) in self.dtype:
            dtype = self.dtype[type(inpt)]
        elif "others" in self.dtype:
            dtype = self.dtype["others"]
        else:
            raise ArgumentError(f"ToDtype: no dtype was specified for type {type(inpt).__name__}. "
                                "If you only need to convert images or videos, pass e.g. "
                                "dtype=ember.float32; in a dict, 'others' is a catch-all key, e.g. "
                                "{tv_tensors.Mask: ember.int64, 'others': None}")
        if dtype is None:
            if self.scale and is_image:
                warnings.warn("ToDtype: scale was set to True but no dtype was specified for "
                              "images or videos: no scaling will be done", stacklevel=2)
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=dtype, scale=self.scale)


class Lambda(Transform):
    """Applies ``lambd`` to the inputs of ``types`` (default: tensors and arrays, with the
    pure-tensor heuristic of every transform).

    Example:
        >>> Lambda(lambda x: x * 2, ember.Tensor)((ember.ones(1), 3))
        (tensor([2.]), 3)
    """

    def __init__(self, lambd: Callable[[Any], Any], *types: type) -> None:
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd, self.types = lambd, types or self._transformed_types

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self.lambd(inpt) if check_type(inpt, self.types) else inpt


def _valid_boxes(boxes: tv_tensors.BoundingBoxes, min_size: float, min_area: float) -> Tensor:
    """Which boxes are at least ``min_size`` on each side and ``min_area`` in area, and lie
    within the canvas."""
    return F.sanitize_bounding_boxes(boxes, min_size=min_size, min_area=min_area)[1]


class _Sanitize(Transform):
    """Removes invalid entries (boxes, key points) with the labels that go with them:
    subclasses say where the entries are, which are valid and what else is indexed with them.
    ``labels_getter`` finds the labels: ``"default"`` takes the ``"labels"`` entry of a dict
    sample (or of the dict that is a tuple sample's second item); a callable returns them (a
    tensor, or a tuple of tensors); None keeps no labels."""

    _what = "boxes"
    _indexed: tuple[type, ...] = ()

    def __init__(self, labels_getter: str | Callable | None) -> None:
        super().__init__()
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def _entries(self, flat_inputs: list) -> Tensor:
        raise NotImplementedError

    def _valid(self, entries: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, *inputs: Any) -> Any:
        op = type(self).__name__
        sample = inputs if len(inputs) > 1 else inputs[0]
        labels = self._labels_getter(sample)
        labels = () if labels is None else \
            (tuple(labels) if isinstance(labels, (tuple, list)) else (labels,))
        for entry in labels:
            if not isinstance(entry, Tensor):
                raise ArgumentError(f"{op}: the labels in the input to forward() must be a tensor "
                                    f"or a tuple/list of them, got {type(entry).__name__}")
        flat_inputs, spec = tree_flatten(sample)
        entries = self._entries(flat_inputs)
        for entry in labels:
            if entry.shape[0] != entries.shape[0]:
                raise ArgumentError(f"{op}: number of {self._what} ({entries.shape[0]}) and number "
                                    f"of labels ({entry.shape[0]}) do not match; please make sure "
                                    "the labels are in the right place")
        params = {"valid": self._valid(entries), "labels": labels}
        return tree_unflatten([self.transform(x, params) for x in flat_inputs], spec)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        is_label = any(inpt is label for label in params["labels"])
        if not (is_label or isinstance(inpt, self._indexed)):
            return inpt
        valid = params["valid"]
        if isinstance(inpt, tv_tensors.Mask) and (inpt.ndim < 3 or inpt.shape[0] != len(valid)):
            return inpt  # a semantic mask (H, W), not one per entry: kept, as torchvision
        out = F.to_pure_tensor(inpt)[valid]
        return out if is_label else tv_tensors.wrap(out, like=inpt)


class SanitizeBoundingBoxes(_Sanitize):
    """Removes degenerate boxes (a side under ``min_size``, area under ``min_area``, or
    outside the canvas), with the masks and labels that go with them (``labels_getter``: see
    :class:`SanitizeKeyPoints`).

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1, 3]], format="XYXY",
        ...                                  canvas_size=(8, 8))
        >>> out = SanitizeBoundingBoxes()({"boxes": boxes, "labels": ember.tensor([5, 6])})
        >>> out["boxes"].tolist(), out["labels"].tolist()
        ([[0, 0, 4, 4]], [5])
    """

    _indexed = (tv_tensors.BoundingBoxes, tv_tensors.Mask)

    def __init__(self, min_size: float = 1.0, min_area: float = 1.0,
                 labels_getter: str | Callable | None = "default") -> None:
        super().__init__(labels_getter)
        if min_size < 1:
            raise ArgumentError(f"SanitizeBoundingBoxes: min_size must be >= 1, got {min_size}")
        if min_area < 1:
            raise ArgumentError(f"SanitizeBoundingBoxes: min_area must be >= 1, got {min_area}")
        self.min_size, self.min_area = float(min_size), float(min_area)

    def _entries(self, flat_inputs: list) -> Tensor:
        return get_bounding_boxes(flat_inputs)

    def _valid(self, entries: Tensor) -> Tensor:
        return _valid_boxes(entries, self.min_size, self.min_area)


class SanitizeKeyPoints(_Sanitize):
    """Removes key points outside the canvas (groups ``(N, ..., 2)`` whole, when any of their
    points is outside), with the labels that go with them, as torchvision's: see
    :func:`~ember.vision.transforms.v2.functional.sanitize_keypoints` for the rule. Use it at
    the end of a pipeline whose geometric transforms leave points unclamped.
    ``labels_getter`` finds the labels: ``"default"`` takes the ``"labels"`` entry of a dict
    sample (or of the dict that is a tuple sample's second item); a callable returns them (a
    tensor, or a tuple of tensors); None (the default) keeps no labels.

    Example:
        >>> from ember.vision import tv_tensors
        >>> points = tv_tensors.KeyPoints([[1, 1], [9, 1]], canvas_size=(4, 4))
        >>> out = SanitizeKeyPoints("default")({"points": points, "labels": ember.tensor([5, 6])})
        >>> out["points"].tolist(), out["labels"].tolist()
        ([[1, 1]], [5])
    """

    _what = "key points"
    _indexed = (tv_tensors.KeyPoints,)

    def __init__(self, labels_getter: str | Callable | None = None) -> None:
        super().__init__(labels_getter)

    def _entries(self, flat_inputs: list) -> Tensor:
        return get_keypoints(flat_inputs)

    def _valid(self, entries: Tensor) -> Tensor:
        return F.sanitize_keypoints(entries)[1]
