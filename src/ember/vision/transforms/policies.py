"""``AutoAugment``: torchvision's learned policy tables (ImageNet, CIFAR-10, SVHN) over the
operations of :mod:`ember.vision.transforms.autoaugment`."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms._pil import accepts_pil_in_rgb
from ember.vision.transforms.augment import _Random
from ember.vision.transforms.autoaugment import _run_policy, _space
from ember.vision.transforms.basic import _hw
from ember.vision.transforms.functional import Image, InterpolationMode

__all__ = ["AutoAugment", "AutoAugmentPolicy"]


class AutoAugmentPolicy(Enum):
    """The AutoAugment policies learned on ImageNet, CIFAR-10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _policy(table: str) -> list[tuple[tuple[str, float, int | None], ...]]:
    """A policy table written one sub-policy a line as ``Op prob [bin], Op prob [bin]``."""
    subs = []
    for line in table.strip().splitlines():
        steps = []
        for step in line.split(","):
            name, prob, *bin_ = step.split()
            steps.append((name, float(prob), int(bin_[0]) if bin_ else None))
        subs.append(tuple(steps))
    return subs


# torchvision's tables (from the AutoAugment paper): 25 sub-policies of two steps each
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: _policy("""
        Posterize 0.4 8, Rotate 0.6 9
        Solarize 0.6 5, AutoContrast 0.6
        Equalize 0.8, Equalize 0.6
        Posterize 0.6 7, Posterize 0.6 6
        Equalize 0.4, Solarize 0.2 4
        Equalize 0.4, Rotate 0.8 8
        Solarize 0.6 3, Equalize 0.6
        Posterize 0.8 5, Equalize 1.0
        Rotate 0.2 3, Solarize 0.6 8
        Equalize 0.6, Posterize 0.4 6
        Rotate 0.8 8, Color 0.4 0
        Rotate 0.4 9, Equalize 0.6
        Equalize 0.0, Equalize 0.8
        Invert 0.6, Equalize 1.0
        Color 0.6 4, Contrast 1.0 8
        Rotate 0.8 8, Color 1.0 2
        Color 0.8 8, Solarize 0.8 7
        Sharpness 0.4 7, Invert 0.6
        ShearX 0.6 5, Equalize 1.0
        Color 0.4 0, Equalize 0.6
        Equalize 0.4, Solarize 0.2 4
        Solarize 0.6 5, AutoContrast 0.6
        Invert 0.6, Equalize 1.0
        Color 0.6 4, Contrast 1.0 8
        Equalize 0.8, Equalize 0.6"""),
    AutoAugmentPolicy.CIFAR10: _policy("""
        Invert 0.1, Contrast 0.2 6
        Rotate 0.7 2, TranslateX 0.3 9
        Sharpness 0.8 1, Sharpness 0.9 3
        ShearY 0.5 8, TranslateY 0.7 9
        AutoContrast 0.5, Equalize 0.9
        ShearY 0.2 7, Posterize 0.3 7
        Color 0.4 3, Brightness 0.6 7
        Sharpness 0.3 9, Brightness 0.7 9
        Equalize 0.6, Equalize 0.5
        Contrast 0.6 7, Sharpness 0.6 5
        Color 0.7 7, TranslateX 0.5 8
        Equalize 0.3, AutoContrast 0.4
        TranslateY 0.4 3, Sharpness 0.2 6
        Brightness 0.9 6, Color 0.2 8
        Solarize 0.5 2, Invert 0.0
        Equalize 0.2, AutoContrast 0.6
        Equalize 0.2, Equalize 0.6
        Color 0.9 9, Equalize 0.6
        AutoContrast 0.8, Solarize 0.2 8
        Brightness 0.1 3, Color 0.7 0
        Solarize 0.4 5, AutoContrast 0.9
        TranslateY 0.9 9, TranslateY 0.7 9
        AutoContrast 0.9, Solarize 0.8 3
        Equalize 0.8, Invert 0.1
        TranslateY 0.7 9, AutoContrast 0.9"""),
    AutoAugmentPolicy.SVHN: _policy("""
        ShearX 0.9 4, Invert 0.2
        ShearY 0.9 8, Invert 0.7
        Equalize 0.6, Solarize 0.6 6
        Invert 0.9, Equalize 0.6
        Equalize 0.6, Rotate 0.9 3
        ShearX 0.9 4, AutoContrast 0.8
        ShearY 0.9 8, Invert 0.4
        ShearY 0.9 5, Solarize 0.2 6
        Invert 0.9, AutoContrast 0.8
        Equalize 0.6, Rotate 0.9 3
        ShearX 0.9 4, Solarize 0.3 3
        ShearY 0.8 8, Invert 0.7
        Equalize 0.9, TranslateY 0.6 6
        Invert 0.9, Equalize 0.6
        Contrast 0.3 3, Rotate 0.8 4
        Invert 0.8, TranslateY 0.0 2
        ShearY 0.7 6, Solarize 0.4 8
        Invert 0.6, Rotate 0.8 4
        ShearY 0.3 7, TranslateX 0.9 3
        ShearX 0.1 6, Invert 0.6
        Solarize 0.7 2, TranslateY 0.6 7
        ShearY 0.8 4, Invert 0.8
        ShearX 0.7 9, TranslateY 0.8 3
        ShearY 0.8 5, AutoContrast 0.7
        ShearX 0.7 2, Invert 0.1"""),
}


class AutoAugment(_Random):
    """One of the ``policy``'s 25 learned sub-policies, drawn uniformly: each of its two steps
    runs with its probability, at its magnitude bin of 10 (a random sign where the operation
    has one), as torchvision's ``AutoAugment``. Takes uint8 images.

    Example:
        >>> img = ember.randint(0, 256, (3, 16, 16), dtype=ember.uint8)
        >>> AutoAugment(AutoAugmentPolicy.CIFAR10)(img).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        if not isinstance(policy, AutoAugmentPolicy):
            raise ArgumentError(f"AutoAugment: the provided policy {policy} is not recognized; "
                                f"expected one of {[p.name for p in AutoAugmentPolicy]}")
        self.policy, self.policies = policy, _POLICIES[policy]
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    @staticmethod
    def get_params(transform_num: int, generator: ember.Generator | None = None
                   ) -> tuple[int, Tensor, Tensor]:
        """A random sub-policy index, the two steps' uniform draws and their signs (0 or 1)."""
        policy_id = int(ember.randint(transform_num, (1,), generator=generator).item())
        probs = ember.rand(2, generator=generator)
        signs = ember.randint(2, (2,), generator=generator)
        return policy_id, probs, signs

    def _ops(self, img: Image) -> list[tuple[str, float]]:
        """The operations of one call with their signed magnitudes (all the draws)."""
        h, w = _hw(img)
        policy_id, probs, signs = self.get_params(len(self.policies), self.generator)
        space = _space(10, 0.3, (150.0 / 331.0 * w, 150.0 / 331.0 * h), 30.0, 0.9, 4)
        ops = []
        for i, (op, p, magnitude_id) in enumerate(self.policies[policy_id]):
            if probs[i].item() > p:
                continue
            magnitude = 0.0
            if magnitude_id is not None:
                bins, signed = space[op]
                magnitude = float(bins[magnitude_id])
                if signed and int(signs[i].item()) == 0:
                    magnitude = -magnitude
            ops.append((op, magnitude))
        return ops

    @accepts_pil_in_rgb
    def __call__(self, img: Image) -> Image:
        return _run_policy(self, img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy}, fill={self.fill})"
