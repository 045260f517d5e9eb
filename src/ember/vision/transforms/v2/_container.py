"""Containers of v2 transforms: in sequence, with a probability, one of several, or in a
random order. Each passes the whole sample (all arguments) to the transforms it runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.vision.transforms.v2._transform import Transform


def _check_transforms(op: str, transforms: Any) -> list[Callable]:
    """``transforms`` (a sequence or ``nn.ModuleList`` of callables) as a list."""
    if not isinstance(transforms, (Sequence, nn.ModuleList)) \
            or not all(callable(t) for t in transforms):
        raise TypeError(f"{op}: transforms should be a sequence of callables, got "
                        f"{type(transforms).__name__}")
    return list(transforms)


class Compose(Transform):
    """Applies ``transforms`` one after the other.

    Example:
        >>> from ember.vision.transforms import v2
        >>> t = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.CenterCrop(1)])
        >>> t(ember.tensor([[[1, 2, 3]]])).tolist()
        [[[2]]]
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        self.transforms = _check_transforms("Compose", transforms)
        if not self.transforms:
            raise ArgumentError("Compose: pass at least one transform")

    def forward(self, *inputs: Any) -> Any:
        several = len(inputs) > 1
        for t in self.transforms:
            out = t(*inputs)
            inputs = out if several else (out,)
        return out

    def extra_repr(self) -> str:
        return "\n".join(f"  {t}" for t in self.transforms)


class RandomApply(Transform):
    """Applies all of ``transforms`` (in order) with probability ``p``.

    Example:
        >>> RandomApply([lambda x: x + 1], p=1.0)(ember.zeros(1)).tolist()
        [1.0]
    """

    def __init__(self, transforms: Sequence[Callable], p: float = 0.5) -> None:
        super().__init__()
        self.transforms = _check_transforms("RandomApply", transforms)
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"RandomApply: p should be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        sample = inputs if len(inputs) > 1 else inputs[0]
        if ember.rand(1).item() >= self.p:
            return sample
        return Compose(self.transforms)(*inputs)


class RandomChoice(Transform):
    """Applies one of ``transforms``, chosen with probabilities ``p`` (default uniform; they
    are normalized).

    Example:
        >>> RandomChoice([lambda x: x + 1, lambda x: x + 1])(ember.zeros(1)).tolist()
        [1.0]
    """

    def __init__(self, transforms: Sequence[Callable], p: Sequence[float] | None = None
                 ) -> None:
        super().__init__()
        self.transforms = _check_transforms("RandomChoice", transforms)
        if p is None:
            p = [1.0] * len(self.transforms)
        if len(p) != len(self.transforms):
            raise ArgumentError("RandomChoice: length of p doesn't match the number of "
                                f"transforms: {len(p)} != {len(self.transforms)}")
        weights = [float(w) for w in p]
        if not all(0 <= w < math.inf for w in weights) or not any(weights):
            raise ArgumentError(f"RandomChoice: p should be finite non-negative weights with a "
                                f"positive sum, got {list(p)}")
        top = max(weights)  # (weights near the float maximum would overflow their sum)
        total = sum(w / top for w in weights)
        self.p = [w / top / total for w in weights]

    def forward(self, *inputs: Any) -> Any:
        k = int(ember.multinomial(ember.tensor(self.p), 1).item())
        return self.transforms[k](*inputs)


class RandomOrder(Transform):
    """Applies ``transforms`` in a random order.

    Example:
        >>> RandomOrder([lambda x: x + 1, lambda x: x * 2])(ember.zeros(1)).item() in (1, 2)
        True
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        self.transforms = _check_transforms("RandomOrder", transforms)

    def forward(self, *inputs: Any) -> Any:
        order = ember.randperm(len(self.transforms)).tolist()
        return Compose([self.transforms[k] for k in order])(*inputs)
