"""Dropout layers: active in training mode, the identity in evaluation mode. ``AlphaDropout``
and ``FeatureAlphaDropout`` keep SELU activations' mean and variance."""

from __future__ import annotations

from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """The base of every dropout layer (PyTorch's name): probability ``p`` and ``inplace``;
    ``_fn`` names the function of :mod:`ember.nn.functional` it applies in training."""

    _fn = "dropout"

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability ``p`` in training and scales the rest by
    ``1/(1-p)``.

    Example:
        >>> d = nn.Dropout(0.5).eval()
        >>> d(ember.ones(3))
        tensor([1., 1., 1.])
    """


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, L)`` inputs."""

    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, H, W)`` inputs."""

    _fn = "dropout2d"


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, D, H, W)`` inputs."""

    _fn = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and
    all are then rescaled and shifted to keep zero mean and unit variance.

    Example:
        >>> nn.AlphaDropout(0.2).eval()(ember.ones(2))
        tensor([1., 1.])
    """

    _fn = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` of whole channels of (N, C, *) inputs."""

    _fn = "feature_alpha_dropout"
