"""Channel rounding shared by the MobileNets, EfficientNets and MNASNet, and the renaming of old
checkpoint keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, default
    ``divisor``), bumped up one multiple if rounding lost more than 10%."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


class LegacyKeys:
    """Mixin for a model whose published torchvision checkpoints predate its module names:
    ``load_state_dict`` renames keys matching ``LEGACY_KEYS`` (regex, replacement) pairs
    before loading, as torchvision's builders do when they fetch those files. The caller's
    dict is left as it is."""

    LEGACY_KEYS: tuple[tuple[re.Pattern, str], ...] = ()

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> Any:
        renamed = dict(state_dict)
        for key in list(renamed):
            for pattern, replacement in self.LEGACY_KEYS:
                new = pattern.sub(replacement, key)
                if new != key:
                    renamed[new] = renamed.pop(key)
                    break
        return super().load_state_dict(renamed, strict, assign)  # type: ignore[misc]
