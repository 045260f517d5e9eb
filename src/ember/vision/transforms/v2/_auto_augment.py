"""The automatic augmentation policies as v2 transforms: the sample's one image (or video),
uint8 or float, takes the operations the v1 policy draws; masks and boxes are refused, as
torchvision's v2 refuses them, and key points too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember.tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.vision import tv_tensors
from ember.vision.transforms import augmix, policies
from ember.vision.transforms import autoaugment as v1
from ember.vision.transforms._image import _tensor_op
from ember.vision.transforms._pil import accepts_pil
from ember.vision.transforms.policies import AutoAugmentPolicy
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2.functional import InterpolationMode

__all__ = ["AugMix", "AutoAugment", "RandAugment", "TrivialAugmentWide"]


def _apply(img: Any, op: str, magnitude: float, interpolation: InterpolationMode,
           fill: Sequence[float] | None) -> Any:
    """One operation of the policies' space on a uint8 or float image: the v1 operation, with
    the ones whose v2 kernels differ (posterize, solarize, equalize, autocontrast) taken by
    the v2 functions, and the solarize threshold (0 to 255 in the space) scaled to the range."""
    if op == "Posterize":
        return F.posterize(img, int(magnitude))
    if op == "Solarize":
        floating = isinstance(img, Tensor) and img.is_floating_point()
        return F.solarize(img, magnitude / 255.0 if floating else magnitude)
    if op == "Equalize":
        return F.equalize(img)
    if op == "AutoContrast":
        return F.autocontrast(img)
    return v1._apply(img, op, magnitude, interpolation, fill)


def _check_dtype(op: str, img: Any) -> None:
    if isinstance(img, Tensor):
        if img.dtype is ember.uint8 or img.is_floating_point():
            return
    elif np.asarray(img).dtype == np.uint8:
        return
    raise TypeError(f"{op}: expected a uint8 or float image or video, got "
                    f"{getattr(img, 'dtype', type(img).__name__)}")


class _AutoAugmentBase(Transform):
    """Finds the single image or video of the sample and applies the operations that
    ``self._policy`` draws (v1's draws) to it."""

    _policy: Any

    def forward(self, *inputs: Any) -> Any:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        needs = self._needs_transform_list(flat_inputs)
        found = []
        for k, (inpt, need) in enumerate(zip(flat_inputs, needs)):
            # (key points too: the policies' shears and rotations would leave them behind)
            if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask,
                                 tv_tensors.KeyPoints)):
                raise TypeError(f"Inputs of type {type(inpt).__name__} are not supported by "
                                f"{type(self).__name__}()")
            if need:
                found.append(k)
        if not found:
            raise TypeError(f"{type(self).__name__}: found no image or video in the sample")
        if len(found) != 1:
            raise TypeError(f"{type(self).__name__}: auto augment transformations are only "
                            f"defined for a single image or video, found {len(found)}")
        inpt = flat_inputs[found[0]]
        if isinstance(inpt, tv_tensors.Video):
            out = self._augment_video(F.to_pure_tensor(inpt))
        else:
            out = accepts_pil(self._augment, in_rgb=True)(F.to_pure_tensor(inpt))
        flat_inputs[found[0]] = tv_tensors.wrap(out, like=inpt) \
            if isinstance(inpt, tv_tensors.TVTensor) else out
        return tree_unflatten(flat_inputs, spec)

    def _augment(self, img: Any) -> Any:
        """The policy's operations on one image (a tensor or an array)."""
        _check_dtype(type(self).__name__, img)
        fill = v1._fills(img, self._policy.fill)
        for op, magnitude in self._policy._ops(img):
            img = _apply(img, op, magnitude, self._policy.interpolation, fill)
        return img

    def _augment_video(self, video: Tensor) -> Tensor:
        """The policy's operations on a video ``(..., T, C, H, W)``."""
        return self._augment(video)


class RandAugment(_AutoAugmentBase):
    """v1's :class:`~ember.vision.transforms.RandAugment` (``num_ops`` operations at bin
    ``magnitude``) on the sample's uint8 or float image or video.

    Example:
        >>> from ember.vision import tv_tensors
        >>> img = tv_tensors.Image(ember.randint(0, 256, (3, 8, 8), dtype=ember.uint8))
        >>> out, label = RandAugment()(img, 3)
        >>> type(out).__name__, label
        ('Image', 3)
    """

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__()
        self._policy = v1.RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation,
                                      fill)
        self.num_ops, self.magnitude = num_ops, magnitude
        self.num_magnitude_bins, self.interpolation = num_magnitude_bins, interpolation


class TrivialAugmentWide(_AutoAugmentBase):
    """v1's :class:`~ember.vision.transforms.TrivialAugmentWide` (one operation at a random
    magnitude) on the sample's uint8 or float image or video.

    Example:
        >>> img = ember.randint(0, 256, (3, 8, 8), dtype=ember.uint8)
        >>> TrivialAugmentWide()(img).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__()
        self._policy = v1.TrivialAugmentWide(num_magnitude_bins, interpolation, fill)
        self.num_magnitude_bins, self.interpolation = num_magnitude_bins, interpolation


class AutoAugment(_AutoAugmentBase):
    """v1's :class:`~ember.vision.transforms.AutoAugment` (one of ``policy``'s learned
    sub-policies) on the sample's uint8 or float image or video.

    Example:
        >>> img = ember.randint(0, 256, (3, 8, 8), dtype=ember.uint8)
        >>> AutoAugment(AutoAugmentPolicy.SVHN)(img).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__()
        self._policy = policies.AutoAugment(policy, interpolation, fill)
        self.policy, self.interpolation = policy, interpolation


class AugMix(_AutoAugmentBase):
    """v1's :class:`~ember.vision.transforms.AugMix` (chains of operations mixed with the
    image) on the sample's uint8 or float image or video; a float image is mixed in float.

    Example:
        >>> AugMix()(ember.rand(3, 8, 8)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1,
                 alpha: float = 1.0, all_ops: bool = True,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__()
        self._policy = augmix.AugMix(severity, mixture_width, chain_depth, alpha, all_ops,
                                     interpolation, fill)
        self._policy._apply_op = _apply
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, \
            chain_depth
        self.alpha, self.all_ops, self.interpolation = alpha, all_ops, interpolation

    def _augment(self, img: Any) -> Any:
        _check_dtype(type(self).__name__, img)
        return _tensor_op(self._policy._mix)(img)

    def _augment_video(self, video: Tensor) -> Tensor:
        # v1 mixes each image of a batch with its own weights; a (T, C, H, W) video is one
        # sample, its frames mixed alike (torchvision's v2 takes videos as 5-d batches)
        if video.ndim == 4:
            return self._augment(video.unsqueeze(0)).squeeze(0)
        return self._augment(video)
