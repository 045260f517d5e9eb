"""The base of the v2 transforms: a sample (any pytree of images, videos, masks, boxes,
labels, …) is flattened, the random parameters are drawn once from the inputs to transform,
and every input is transformed by its type with the same parameters."""

from __future__ import annotations

import enum
from typing import Any

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.vision import tv_tensors
from ember.vision.transforms.v2._utils import (
    TypeCheck,
    check_type,
    has_any,
    is_array_image,
)
from ember.vision.transforms.v2.functional._utils import _get_kernel, is_pure_tensor


class Transform(nn.Module):
    """A v2 transform. Subclasses set ``_transformed_types`` and override ``make_params``
    (random draws, once per call) and ``transform`` (one input).

    Pure tensors follow torchvision's heuristic: with no ``Image``, ``Video`` or array image
    (NumPy or PIL, before ``ToImage``) in the sample, the first pure tensor (depth-first) is
    the image and the others pass through; with one, all pure tensors pass through. Arrays,
    which may be plain data too (labels, points), follow the same rule: with no ``Image`` or
    ``Video``, the first array is the image and the other arrays pass through.

    Example:
        >>> from ember.vision.transforms import v2
        >>> out = v2.RandomHorizontalFlip(p=1.0)({"image": ember.tensor([[[1, 2]]]),
        ...                                        "label": 3})
        >>> out["image"].tolist(), out["label"]
        ([[[2, 1]]], 3)
    """

    _transformed_types: tuple[TypeCheck, ...] = (Tensor, is_array_image)

    def _check_inputs(self, flat_inputs: list) -> None:
        """Raises for samples this transform cannot take."""

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        """The random parameters of one call, drawn from the inputs to transform."""
        return {}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """One input transformed with ``params``."""
        raise NotImplementedError(f"{type(self).__name__} must define transform()")

    def _call_kernel(self, functional: Any, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        """``functional``'s kernel for ``inpt``'s type; types without one pass through."""
        return _get_kernel(functional, type(inpt), allow_passthrough=True)(inpt, *args,
                                                                           **kwargs)

    def _needs_transform_list(self, flat_inputs: list) -> list[bool]:
        typed_image = has_any(flat_inputs, tv_tensors.Image, tv_tensors.Video)
        transform_array = not typed_image
        transform_pure_tensor = not (typed_image or has_any(flat_inputs, is_array_image))
        needs = []
        for inpt in flat_inputs:
            need = check_type(inpt, self._transformed_types)
            if need and is_pure_tensor(inpt):
                need, transform_pure_tensor = transform_pure_tensor, False
            elif need and is_array_image(inpt):
                need, transform_array = transform_array, False
            needs.append(need)
        return needs

    def forward(self, *inputs: Any) -> Any:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self._check_inputs(flat_inputs)
        return self._transform_all(flat_inputs, spec)

    def _transform_all(self, flat_inputs: list, spec: Any) -> Any:
        """The sample rebuilt from its inputs, each transformed if it needs to be, with one
        set of parameters."""
        needs = self._needs_transform_list(flat_inputs)
        params = self.make_params([x for x, need in zip(flat_inputs, needs) if need])
        outputs = [self.transform(x, params) if need else x for x, need in zip(flat_inputs, needs)]
        return tree_unflatten(outputs, spec)

    def extra_repr(self) -> str:
        shown = []
        for name, value in self.__dict__.items():
            if name.startswith("_") or name == "training":
                continue
            if isinstance(value, (bool, int, float, str, tuple, list, enum.Enum, ember.DType)):
                shown.append(f"{name}={value}")
        return ", ".join(shown)


class _RandomApplyTransform(Transform):
    """A transform applied to the whole sample with probability ``p`` (one coin per call)."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: p should be a probability in [0, 1], got "
                                f"{p}")
        super().__init__()
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(sample)
        self._check_inputs(flat_inputs)
        if ember.rand(1).item() >= self.p:
            return sample
        return self._transform_all(flat_inputs, spec)
