"""``AugMix``: chains of random operations mixed with the image, as torchvision's, over the
operations of :mod:`ember.vision.transforms.autoaugment`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms._image import _tensor_op
from ember.vision.transforms._pil import accepts_pil_in_rgb
from ember.vision.transforms.augment import _Random
from ember.vision.transforms.autoaugment import _apply, _check_uint8, _fills, _space
from ember.vision.transforms.functional import Image, InterpolationMode

__all__ = ["AugMix"]


def _augmix_space(width: int, height: int, all_ops: bool) -> dict[str, tuple[np.ndarray, bool]]:
    """AugMix's operations (the colour enhancements only with ``all_ops``), in torchvision's
    order, with their 10 magnitude bins and whether the sign is random: the policies' space
    with translations up to a third of the image and posterizing to 4 bits down to 0."""
    space = _space(10, 0.3, (width / 3.0, height / 3.0), 30.0, 0.9, 4)
    space["Posterize"] = (space["Posterize"][0] - 4, False)
    names = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize", "Solarize",
             "AutoContrast", "Equalize"]
    if all_ops:
        names += ["Brightness", "Color", "Contrast", "Sharpness"]
    return {name: space[name] for name in names}


class AugMix(_Random):
    """AugMix: ``mixture_width`` chains of 1–3 random operations (``chain_depth`` if positive)
    at magnitudes below ``severity``, mixed with Dirichlet(``alpha``) weights and then with
    the image by a Beta(``alpha``, ``alpha``) weight, as torchvision's (the mix truncated back
    to uint8). Takes uint8 images ``(..., C, H, W)`` or ``(H, W[, C])``.

    Example:
        >>> img = ember.randint(0, 256, (3, 16, 16), dtype=ember.uint8)
        >>> AugMix()(img).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1,
                 alpha: float = 1.0, all_ops: bool = True,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        if not 1 <= severity <= 10:
            raise ArgumentError(f"AugMix: the severity must be between [1, 10], got {severity}")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, \
            chain_depth
        self.alpha, self.all_ops = alpha, all_ops
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    # one operation of the space on an image; v2's AugMix puts its float-aware one here
    _apply_op = staticmethod(_apply)

    def _sample_dirichlet(self, params: Tensor) -> Tensor:
        """Dirichlet draws, one per row of ``params`` (normalized Gamma draws)."""
        g = ember._standard_gamma(params, generator=self.generator)
        return g / g.sum(-1, keepdim=True)

    def _draw(self, high: int) -> int:
        return int(ember.randint(high, (1,), generator=self.generator).item())

    def _mix(self, img: Tensor) -> Tensor:
        fill = _fills(img, self.fill)
        h, w = img.shape[-2:]
        space = _augmix_space(w, h, self.all_ops)
        names = list(space)
        batch = img.reshape(*[1] * max(4 - img.ndim, 0), *img.shape)
        n = batch.shape[0]
        ones = [1] * (batch.ndim - 1)
        m = self._sample_dirichlet(ember.tensor([self.alpha] * 2).expand(n, -1))
        weights = self._sample_dirichlet(ember.tensor([self.alpha] * self.mixture_width)
                                         .expand(n, -1)) * m[:, 1].reshape(n, -1)
        mix = m[:, 0].reshape(n, *ones) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else \
                int(ember.randint(1, 4, (1,), generator=self.generator).item())
            for _ in range(depth):
                op = names[self._draw(len(names))]
                bins, signed = space[op]
                magnitude = float(bins[self._draw(self.severity)]) if bins.ndim else 0.0
                if signed and self._draw(2):
                    magnitude = -magnitude
                aug = self._apply_op(aug, op, magnitude, self.interpolation, fill)
            mix = mix + weights[:, i].reshape(n, *ones) * aug
        return mix.reshape(img.shape).to(img.dtype)

    @accepts_pil_in_rgb
    def __call__(self, img: Image) -> Image:
        _check_uint8("AugMix", img)
        return _tensor_op(self._mix)(img)
