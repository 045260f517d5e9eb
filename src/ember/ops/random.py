"""Random sampling and generators."""

from __future__ import annotations

__all__: list[str] = []
