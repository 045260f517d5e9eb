"""Shape ops: reshape/view, permute, transpose, squeeze, unsqueeze, flatten, cat, stack, split…"""

from __future__ import annotations

__all__: list[str] = []
